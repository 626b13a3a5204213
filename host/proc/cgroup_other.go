//go:build !linux

package proc

import (
	"errors"
	"os/exec"
)

// Without Linux there are no cgroups: the watchdog has nothing to count
// either (see contain_other.go).

type cgroups struct{}

type unitCgroup struct{}

func newCgroups(int64) (*cgroups, string, error) { return nil, "", errors.New("cgroups need Linux") }

func (*cgroups) create(int) (*unitCgroup, error)               { return nil, errors.ErrUnsupported }
func (*cgroups) start(*unitCgroup, *exec.Cmd, int) error       { return errors.ErrUnsupported }
func (*cgroups) close() bool                                   { return true }
func (*cgroups) startUnit(*exec.Cmd, int) (*unitCgroup, error) { return nil, errors.ErrUnsupported }
func (*cgroups) stopSpawner()                                  {}
func (*cgroups) isV2() bool                                    { return false }
func (*cgroups) cleanStale()                                   {}
func (*unitCgroup) limitHit() bool                             { return false }
func (*unitCgroup) procs() []int                               { return nil }
func (*unitCgroup) count() (int, int)                          { return -1, -1 }
func (*unitCgroup) kill() bool                                 { return true }
func (*unitCgroup) remove() bool                               { return true }
