package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
)

// fitViewport sizes the window of the browser's first page so that its
// viewport (innerWidth x innerHeight) is vp: headless Chromium's
// --window-size is the window's, and the page gets less. A browser with no
// page is left as it is.
func fitViewport(ctx context.Context, c *Conn, vp Viewport) error {
	ts, err := c.Targets(ctx)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.Type != "page" {
			continue
		}
		s, err := c.Attach(ctx, t.TargetID)
		if err != nil {
			return err
		}
		defer s.Detach(ctx)
		inner, err := innerSize(ctx, s)
		if err != nil || inner == vp {
			return err
		}
		// The window's extra height is not the same at every size: grow it
		// by what is missing until the page has vp (the page sees the new
		// size a moment later).
		for try := 0; try < 100 && inner != vp; try++ {
			if try%10 == 0 {
				win, err := cdp.Call(ctx, c, browser.GetWindowForTarget, browser.GetWindowForTargetParams{TargetID: t.TargetID})
				if err != nil {
					return err
				}
				b := &browser.Bounds{Width: win.Bounds.Width + int64(vp.Width-inner.Width), Height: win.Bounds.Height + int64(vp.Height-inner.Height)}
				if _, err := cdp.Call(ctx, c, browser.SetWindowBounds, browser.SetWindowBoundsParams{WindowID: win.WindowID, Bounds: b}); err != nil {
					return err
				}
			}
			time.Sleep(20 * time.Millisecond)
			if inner, err = innerSize(ctx, s); err != nil {
				return err
			}
		}
		if inner == vp {
			return nil
		}
		return fmt.Errorf("viewport %v after resizing the window, want %v", inner, vp)
	}
	return nil
}

func innerSize(ctx context.Context, s *Session) (Viewport, error) {
	res, err := cdp.Call(ctx, s, runtime.Evaluate, runtime.EvaluateParams{Expression: "({width: innerWidth, height: innerHeight})", ReturnByValue: ptr(true)})
	if err != nil {
		return Viewport{}, err
	}
	var v Viewport
	if err := json.Unmarshal(res.Result.Value, &v); err != nil {
		return Viewport{}, fmt.Errorf("viewport: %w", err)
	}
	return v, nil
}
