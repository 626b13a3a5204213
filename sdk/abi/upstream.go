package abi

import "encoding/json"

// The wire types of aiod:upstream (spec/abi/v1/upstream.md).

// UpstreamListRequest is the request of aiod:upstream.list.
type UpstreamListRequest struct {
	Server string `json:"server"`
}

// UpstreamListResponse is the response of list: the server's tools under
// its own names, each as it wrote it, in its order. Reachable is false when
// the server did not answer (Tools is then empty).
type UpstreamListResponse struct {
	Tools     []json.RawMessage `json:"tools"`
	Reachable bool              `json:"reachable"`
}

// UpstreamCallRequest is the request of call: the server, the tool's name
// as the server gives it (no prefix), and the arguments object (absent or
// null: none).
type UpstreamCallRequest struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// The response of call is the server's CallToolResult as it wrote it (no
// wrapper), or, when the server is down or its answer could not be used,
// an isError result whose text names the server.

// UpstreamRPCError is the error object of a call the server answered with
// a JSON-RPC error (code "invalid"): its code, message and data.
type UpstreamRPCError struct {
	Code    string          `json:"code"`
	Message string          `json:"message"`
	RPCCode int64           `json:"rpc_code"`
	RPCData json.RawMessage `json:"rpc_data,omitempty"`
}
