package server_test

// messageFields selects every field of every message variant.
const messageFields = `
	__typename
	... on MessageBase { id conversationId role position createdAt updatedAt label sourceId }
	... on TextMessage { parts { kind content text html signature } content text html thinking }
	... on ImageMessage {
		source { kind url base64 mediaType filePath }
		recognitionMode
		recognition { status modeUsed recognizedText visionAnalysis confidence language notice error { message retryable } processedAt }
	}
	... on FileReferenceMessage {
		path startLine endLine
		resolution { status content truncated originalSize error { message retryable } resolvedAt }
	}
	... on ToolRequestMessage {
		parts { kind text signature } content text html thinking
		toolCalls { id name arguments approvalStatus decision { status decidedBy reason decidedAt } }
	}
	... on ToolResultMessage {
		toolCallId toolName status output parts { kind text } content text html
		error { message stackTrace recoverable } durationMs executedAt truncated originalSize
	}
	... on SystemControlMessage { kind from to params }
	... on MCPResourceMessage { serverName resourceUri content text html mimeType retrievedAt truncated }
	... on UnknownMessage { type raw }
`

// addMessageMutation adds a message and returns it with every field.
const addMessageMutation = `mutation($c: ID!, $i: MessageInput!) {
	addMessage(conversationId: $c, input: $i) { cursor node {` + messageFields + `} } }`

// messagesQuery reads a page of a conversation with every field.
const messagesQuery = `query($c: ID!, $first: Int, $after: String, $last: Int, $before: String) {
	conversation(id: $c) {
		id title messageCount updatedAt
		messages(first: $first, after: $after, last: $last, before: $before) {
			totalCount
			pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
			edges { cursor node {` + messageFields + `} }
		}
	}
}`
