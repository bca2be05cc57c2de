package server_test

import "github.com/parley-dev/parley/internal/selection"

// addMessageMutation adds a message and returns it with every field.
const addMessageMutation = `mutation($c: ID!, $i: MessageInput!) {
	addMessage(conversationId: $c, input: $i) { cursor node {` + selection.MessageFields + `} } }`

// messagesQuery reads a page of a conversation with every field.
const messagesQuery = `query($c: ID!, $first: Int, $after: String, $last: Int, $before: String) {
	conversation(id: $c) {
		id title messageCount updatedAt
		messages(first: $first, after: $after, last: $last, before: $before) {
			totalCount
			pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
			edges { cursor node {` + selection.MessageFields + `} }
		}
	}
}`
