package main

import "github.com/aiodhq/aiod/sdk/state"

// stateKV is the history store over the aiod:state family.
type stateKV struct{}

func (stateKV) Get(key string) (string, bool, error) { return state.Get(key) }
func (stateKV) Set(key, value string) error          { return state.Set(key, value) }
func (stateKV) Delete(key string) error {
	_, err := state.Delete(key)
	return err
}
