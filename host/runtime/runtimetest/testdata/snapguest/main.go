// Command snapguest is a test plugin for instances from snapshots: "seed"
// returns a number its initialisation drew from the runtime's randomness
// (so two initialisations tell themselves apart), "bump" counts its calls
// in memory (so an instance's writes can be seen, or not, by another).
package main

import (
	"math/rand/v2"
	"strconv"

	"github.com/aiodhq/aiod/sdk"
)

var (
	seed    = rand.Uint64()
	counter int
)

type none struct{}

func init() {
	sdk.Plugin(sdk.Info{Name: "snapguest", Version: "1.0.0"})
	sdk.AddTool(sdk.Tool{Name: "seed", Description: "the initialisation's random number"}, func(*sdk.Ctx, none) (*sdk.Result, error) {
		return sdk.TextResult(strconv.FormatUint(seed, 10)), nil
	})
	sdk.AddTool(sdk.Tool{Name: "bump", Description: "counts its calls"}, func(*sdk.Ctx, none) (*sdk.Result, error) {
		counter++
		return sdk.TextResult(strconv.Itoa(counter)), nil
	})
}

func main() {}
