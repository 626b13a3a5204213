package guest

import (
	"encoding/json"

	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/jsonx"
)

// Do makes one JSON request/response call of a gated family: it marshals
// req, calls name through call, and decodes the answer into resp. On
// failure it returns the error's code name and message ("" on success),
// from the host's {"code","message"} object or, failing that, from the
// numeric code and the raw response.
func Do(call func(name string, req []byte) ([]byte, uint32), name string, req, resp any) (code, message string) {
	b, err := json.Marshal(req)
	if err != nil {
		return "invalid", err.Error()
	}
	return DoRaw(call, name, b, resp)
}

// DoRaw is Do for a request already encoded (a request written by hand:
// encoding/json in wasm costs tens of microseconds on a small struct).
func DoRaw(call func(name string, req []byte) ([]byte, uint32), name string, b []byte, resp any) (code, message string) {
	out, c := call(name, b)
	if c != 0 {
		return Decode(out, c)
	}
	if err := jsonx.Unmarshal(out, resp); err != nil {
		return "internal", "bad response from the host: " + err.Error()
	}
	return "", ""
}

// Decode is the code name and message of a failed call's error response
// (code is its numeric code), as Do reads them.
func Decode(out []byte, c uint32) (code, message string) {
	var e abi.Error
	if json.Unmarshal(out, &e) != nil || e.Message == "" {
		e.Message = string(out)
	}
	if e.Code == "" {
		e.Code = abi.CodeName(c)
	}
	return e.Code, e.Message
}

// CodeIs reports whether target is the one of a family's sentinel errors
// (errors.New(code name), as sdk/files' ErrDenied) that names code: the
// body of every family's Error.Is.
func CodeIs(code string, target error, sentinels ...error) bool {
	for _, s := range sentinels {
		if s == target {
			return code == s.Error()
		}
	}
	return false
}
