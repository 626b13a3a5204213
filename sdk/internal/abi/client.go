package abi

// Operations and return codes of aiod_call beyond tools (spec/abi/v1.md):
// the rest of the MCP server surface, and the two other ways a call ends.
const (
	OpPromptGet    = 2
	OpResourceRead = 3
	OpComplete     = 4

	// RetInputRequired: the call stopped to ask the client for input
	// (aiod:core.client_input answered input_required).
	RetInputRequired = 4
	// RetRPCError: the output is a JSON-RPC error object to answer with.
	RetRPCError = 5
)

// CodeInputRequired is client_input's code for "ask the client first".
const CodeInputRequired = 10
