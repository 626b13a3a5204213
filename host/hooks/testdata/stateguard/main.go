// Command stateguard is a guard of the hooks tests that uses the state
// family: it counts the calls it sees and denies every third. Without the
// grant of "state" the host refuses it at load, and the calls it would
// guard fail closed.
package main

import (
	"strconv"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/abi"
	"github.com/aiodhq/aiod/sdk/state"
)

func init() {
	sdk.Plugin(sdk.Info{Name: "stateguard", Version: "1.0.0", Description: "The hooks tests' guard with a family.",
		Capabilities: abi.Capabilities{State: &abi.StateScope{MaxBytes: 1024}}})
	sdk.BeforeHook([]string{"*"}, func(_ *sdk.Ctx, ev *sdk.HookEvent) sdk.HookAnswer {
		v, _, err := state.Get("n")
		if err != nil {
			return sdk.Deny("state: " + err.Error())
		}
		n, _ := strconv.Atoi(v)
		n++
		if err := state.Set("n", strconv.Itoa(n)); err != nil {
			return sdk.Deny("state: " + err.Error())
		}
		if n%3 == 0 {
			return sdk.Deny("call " + strconv.Itoa(n) + " of " + ev.Tenant)
		}
		return sdk.Allow()
	})
}

func main() {}
