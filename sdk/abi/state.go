package abi

// The wire types of aiod:state (spec/abi/v1/state.md).

// StateKeyRequest is the request of aiod:state.get and delete.
type StateKeyRequest struct {
	Key string `json:"key"`
}

// StateGetResponse is the response of get.
type StateGetResponse struct {
	Found bool   `json:"found"`
	Value string `json:"value"`
}

// StateSetRequest is the request of set.
type StateSetRequest struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// StateSetResponse is the response of set.
type StateSetResponse struct {
	BytesUsed int64 `json:"bytes_used"`
	MaxBytes  int64 `json:"max_bytes"`
}

// StateDeleteResponse is the response of delete.
type StateDeleteResponse struct {
	Deleted bool `json:"deleted"`
}

// StateListRequest is the request of list.
type StateListRequest struct {
	Prefix string `json:"prefix,omitempty"`
	After  string `json:"after,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// StateListResponse is the response of list.
type StateListResponse struct {
	Keys      []string `json:"keys"`
	Truncated bool     `json:"truncated"`
}

// State limits.
const (
	// StateDefaultMaxBytes applies when a grant sets no max_bytes.
	StateDefaultMaxBytes = 1 << 20
	// StateMaxKeyBytes bounds a key.
	StateMaxKeyBytes = 1024
	// StateDefaultList and StateMaxList are the default and largest
	// limit of one list call.
	StateDefaultList = 1000
	StateMaxList     = 10000
)
