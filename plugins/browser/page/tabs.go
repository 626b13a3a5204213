package main

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/aiodhq/aiod/sdk/cdp"
	"github.com/aiodhq/aiod/sdk/state"
)

// State keys: the current tab's target id, and the tabs' order (target
// ids, oldest first: the browser's own target list is in no stable order).
const (
	keyActive  = "active"
	keyTabs    = "tabs"
	keyCurrent = "cur"
)

// current is a session on the current tab: the one the client switched
// to or opened last, else the first. The session is kept in the state
// ("cur": target and session ids) and checked with an events call that
// only the host answers, so the fast path costs no browser round trip.
func current() (*cdp.Session, error) {
	if v, ok, _ := state.Get(keyCurrent); ok {
		if tid, sid, ok := strings.Cut(v, " "); ok {
			s := &cdp.Session{ID: sid, TargetID: tid}
			if _, _, _, err := s.Events([]string{"aiod.none"}, 1, 0); err == nil {
				return s, nil
			}
		}
	}
	if id, ok, _ := state.Get(keyActive); ok && id != "" {
		if s, err := cdp.Attach(id); err == nil {
			_ = state.Set(keyCurrent, s.TargetID+" "+s.ID)
			return s, nil
		} else if errors.Is(err, cdp.ErrUnavailable) || errors.Is(err, cdp.ErrTimeout) {
			return nil, err // no browser: saying so beats looking for another tab
		}
	}
	// A tab closed a moment ago may still be listed: try again for a while.
	var err error
	for try := 0; try < 20; try++ {
		var tabs []cdp.Target
		var active int
		if tabs, active, err = tabList0(); err != nil {
			return nil, err
		}
		var s *cdp.Session
		if s, err = cdp.Attach(tabs[active].TargetID); err == nil {
			_ = state.Set(keyCurrent, s.TargetID+" "+s.ID)
			return s, nil
		}
		if errors.Is(err, cdp.ErrUnavailable) || errors.Is(err, cdp.ErrTimeout) {
			return nil, err
		}
		_, _ = state.Delete(keyActive)
		time.Sleep(100 * time.Millisecond)
	}
	return nil, err
}

// closeTarget closes a tab and waits (up to 2 s) until the browser no
// longer lists it, so that the next call does not find it.
func closeTarget(id string) error {
	if err := cdp.Browser("Target.closeTarget", map[string]any{"targetId": id}, nil); err != nil {
		return err
	}
	for try := 0; try < 40; try++ {
		ts, err := cdp.Targets()
		if err != nil || !slices.ContainsFunc(ts, func(t cdp.Target) bool { return t.TargetID == id }) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// setActive makes the tab id the current one.
func setActive(id string) error {
	_, _ = state.Delete(keyCurrent)
	return state.Set(keyActive, id)
}

// tabList0 lists the open tabs in their order and says which is current;
// with none open it opens about:blank, as a browser always has a page.
func tabList0() ([]cdp.Target, int, error) {
	ts, err := cdp.Targets()
	if err != nil {
		return nil, 0, err
	}
	var pages []cdp.Target
	for _, t := range ts {
		if t.Type == "page" {
			pages = append(pages, t)
		}
	}
	if len(pages) == 0 {
		id, err := createTab("about:blank")
		if err != nil {
			return nil, 0, err
		}
		pages = []cdp.Target{{TargetID: id, Type: "page", URL: "about:blank", Title: "about:blank"}}
	}
	var order []string
	if v, ok, _ := state.Get(keyTabs); ok {
		_ = json.Unmarshal([]byte(v), &order)
	}
	// the known tabs in their order, then the new ones
	sorted := make([]cdp.Target, 0, len(pages))
	for _, id := range order {
		if i := slices.IndexFunc(pages, func(t cdp.Target) bool { return t.TargetID == id }); i >= 0 {
			sorted = append(sorted, pages[i])
		}
	}
	for _, t := range pages {
		if !slices.Contains(order, t.TargetID) {
			sorted = append(sorted, t)
		}
	}
	ids := make([]string, len(sorted))
	for i, t := range sorted {
		ids[i] = t.TargetID
	}
	if !slices.Equal(ids, order) {
		saveOrder(ids)
	}
	active := 0
	if id, ok, _ := state.Get(keyActive); ok {
		if i := slices.Index(ids, id); i >= 0 {
			active = i
		}
	}
	if a, _, _ := state.Get(keyActive); a != ids[active] {
		_ = setActive(ids[active])
	}
	return sorted, active, nil
}

// saveOrder keeps as many of the newest tabs' ids as a state value holds.
func saveOrder(ids []string) {
	for {
		b, _ := json.Marshal(ids)
		if len(b) <= 1024 || len(ids) == 0 {
			_ = state.Set(keyTabs, string(b))
			return
		}
		ids = ids[1:]
	}
}

// createTab opens url in a new tab and makes it the current one.
func createTab(url string) (string, error) {
	var res struct {
		TargetID string `json:"targetId"`
	}
	if err := cdp.Browser("Target.createTarget", map[string]any{"url": url}, &res); err != nil {
		return "", err
	}
	var order []string
	if v, ok, _ := state.Get(keyTabs); ok {
		_ = json.Unmarshal([]byte(v), &order)
	}
	saveOrder(append(order, res.TargetID))
	_ = setActive(res.TargetID)
	return res.TargetID, nil
}
