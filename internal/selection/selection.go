// Package selection holds GraphQL selections that tests and the benchmark share, so that
// they ask for the same thing and a field added to the schema is added in one place.
package selection

// MessageFields selects every field of every message variant: the widest read a client
// can make of a message, which the tests check field by field and the history benchmark
// measures. TestMessageFieldsSelectsEveryField fails when the schema gains a field this
// misses.
const MessageFields = `
	__typename
	... on MessageBase {
		id conversationId role position createdAt updatedAt label sourceId messageStatus statusReason clientMessageId
		parentId siblings { count index ids } hidden deletedAt
		provenance { provider model responseId finishReason timeToFirstTokenMs durationMs
			usage { inputTokens outputTokens cachedInputTokens cacheCreationInputTokens reasoningTokens } }
	}
	... on TextMessage { parts { kind content text html signature itemId raw citations } content text html thinking }
	... on ImageMessage {
		source { kind url base64 mediaType filePath }
		recognitionMode
		recognition { status modeUsed recognizedText visionAnalysis confidence language script notice error { message retryable } processedAt }
	}
	... on FileReferenceMessage {
		path startLine endLine
		resolution { status content truncated originalSize error { message retryable } resolvedAt }
	}
	... on ToolRequestMessage {
		parts { kind content text html signature itemId raw citations } content text html thinking
		toolCalls { id callId name arguments argumentsRaw argumentsValid partIndex itemId thoughtSignature approvalStatus decision { status decidedBy reason decidedAt } imported }
	}
	... on ToolResultMessage {
		toolCallId toolName status output outputRaw parts { kind content text html signature itemId raw citations } content text html
		error { message stackTrace recoverable } durationMs executedAt truncated originalSize
	}
	... on SystemControlMessage { kind from to params }
	... on MCPResourceMessage { serverName resourceUri content text html mimeType retrievedAt truncated }
	... on CompactionMessage { content text html provider providerData coversThrough }
	... on UnknownMessage { type raw }`

// HistoryQuery is the history benchmark's read: the first 100 messages of a
// conversation ($c), every field (bin/parley-bench, and bench/pair comparing binaries on
// the same read).
const HistoryQuery = `query History($c: ID!) { conversation(id: $c) { messages(first: 100) {
	edges { cursor node {` + MessageFields + `} } } } }`
