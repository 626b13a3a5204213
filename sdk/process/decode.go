package process

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/jsonx"
)

// The responses of start and wait read by hand, member by member (no
// reflection, no encoding/json): they come right after the host function
// waited (a fork, a reap), and in wasm the first decoding after such a
// wait cost 100-160 µs through jsonx's reflection and encoding/json's
// fallback for the one struct-valued field (a Machine Mode call decodes
// two), the code it runs cold in the processor's caches. The host writes
// them with encoding/json; the result is what encoding/json decodes
// (TestDecodeResponses, FuzzDecodeWait).

var errResponse = errors.New("not a JSON object of the expected members")

// decodeStart reads a start response.
func decodeStart(b []byte, r *abi.ProcessStartResponse) error {
	var err error
	werr := jsonx.Members(b, func(k string, v []byte) bool {
		switch k {
		case "id":
			r.ID, err = intOf(v, r.ID)
		case "program":
			r.Program, err = stringOf(v, r.Program)
		case "cwd":
			r.Cwd, err = stringOf(v, r.Cwd)
		}
		return err == nil
	})
	return errors.Join(werr, err)
}

// decodeWait reads a wait response.
func decodeWait(b []byte, r *abi.ProcessWaitResponse) error {
	var err error
	werr := jsonx.Members(b, func(k string, v []byte) bool {
		switch k {
		case "exit_code":
			r.ExitCode, err = intOf(v, r.ExitCode)
		case "signal":
			r.Signal, err = stringOf(v, r.Signal)
		case "timed_out":
			r.TimedOut, err = boolOf(v, r.TimedOut)
		case "killed":
			r.Killed, err = stringOf(v, r.Killed)
		case "duration_ms":
			r.DurationMs, err = int64Of(v, r.DurationMs)
		case "stdout_bytes":
			r.StdoutBytes, err = int64Of(v, r.StdoutBytes)
		case "stdout_truncated":
			r.StdoutTruncated, err = boolOf(v, r.StdoutTruncated)
		case "stderr":
			r.Stderr, err = stringOf(v, r.Stderr)
		case "stderr_truncated":
			r.StderrTruncated, err = boolOf(v, r.StderrTruncated)
		case "collected":
			if string(v) == "null" {
				r.Collected = nil
				break
			}
			if r.Collected == nil {
				r.Collected = &abi.ProcessCollected{}
			}
			c := r.Collected
			werr := jsonx.Members(v, func(k string, v []byte) bool {
				switch k {
				case "kept":
					c.Kept, err = int64Of(v, c.Kept)
				case "events":
					c.Events, err = intOf(v, c.Events)
				case "bytes":
					c.Bytes, err = intOf(v, c.Bytes)
				}
				return err == nil
			})
			err = errors.Join(werr, err)
		}
		return err == nil
	})
	return errors.Join(werr, err)
}

// stringOf is a JSON string's value (null: old, as encoding/json leaves
// it). A string with escapes goes to encoding/json.
func stringOf(v []byte, old string) (string, error) {
	if string(v) == "null" {
		return old, nil
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && !strings.ContainsAny(string(v[1:len(v)-1]), "\\\"") {
		return string(v[1 : len(v)-1]), nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return old, errResponse
	}
	return s, nil
}

func int64Of(v []byte, old int64) (int64, error) {
	if string(v) == "null" {
		return old, nil
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return old, errResponse
	}
	return n, nil
}

func intOf(v []byte, old int) (int, error) {
	n, err := int64Of(v, int64(old))
	return int(n), err
}

func boolOf(v []byte, old bool) (bool, error) {
	switch string(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return old, nil
	}
	return old, errResponse
}
