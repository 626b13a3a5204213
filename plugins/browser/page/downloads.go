package main

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/aiodhq/aiod/sdk"
	"github.com/aiodhq/aiod/sdk/cdp"
	"github.com/aiodhq/aiod/sdk/state"
)

// download is one entry of browser_get_download_list, as the upstream
// tool has it. Each is kept in aiod:state under "dl/<created>/<guid>".
type download struct {
	GUID              string  `json:"guid"`
	URL               string  `json:"url"`
	SuggestedFilename string  `json:"suggestedFilename"`
	ResourceURI       string  `json:"resourceUri"`
	CreatedAt         string  `json:"createdAt"`
	Progress          float64 `json:"progress"`
	State             string  `json:"state"`
}

const dlPrefix = "dl/"

// maxDownloads bounds the list (the oldest entries are forgotten).
const maxDownloads = 200

func loadDownloads() []download {
	keys, err := state.List(dlPrefix)
	if err != nil {
		return nil
	}
	out := make([]download, 0, len(keys))
	for _, k := range keys {
		v, ok, _ := state.Get(k)
		var d download
		if ok && json.Unmarshal([]byte(v), &d) == nil {
			out = append(out, d)
		}
	}
	return out
}

func downloadKey(keys []string, guid string) string {
	for _, k := range keys {
		if strings.HasSuffix(k, "/"+guid) {
			return k
		}
	}
	return ""
}

func saveDownload(key string, d download) {
	for {
		b, _ := json.Marshal(d)
		if len(b) <= 1024 || d.URL == "" {
			_ = state.Set(key, string(b))
			return
		}
		d.URL = d.URL[:len(d.URL)/2] // a value holds 1024 bytes: a very long URL is shortened
	}
}

func clearDownloads() {
	keys, _ := state.List(dlPrefix)
	for _, k := range keys {
		_, _ = state.Delete(k)
	}
}

// syncDownloads records the download events the session's buffer holds
// (waiting up to waitMs for the first one) and returns the list.
func syncDownloads(s *cdp.Session, waitMs int64) []download {
	evs, _, _, err := s.Events([]string{"Page.download*"}, 1000, waitMs)
	if err == nil && len(evs) > 0 {
		keys, _ := state.List(dlPrefix)
		for _, e := range evs {
			var p struct {
				GUID              string  `json:"guid"`
				URL               string  `json:"url"`
				SuggestedFilename string  `json:"suggestedFilename"`
				TotalBytes        float64 `json:"totalBytes"`
				ReceivedBytes     float64 `json:"receivedBytes"`
				State             string  `json:"state"`
			}
			if json.Unmarshal(e.Params, &p) != nil || p.GUID == "" {
				continue
			}
			switch e.Method {
			case "Page.downloadWillBegin":
				if p.SuggestedFilename == "" || p.URL == "" || downloadKey(keys, p.GUID) != "" {
					continue
				}
				now := time.Now().UTC()
				k := fmt.Sprintf("%s%020d/%s", dlPrefix, now.UnixNano(), p.GUID)
				saveDownload(k, download{GUID: p.GUID, URL: p.URL, SuggestedFilename: p.SuggestedFilename,
					ResourceURI: path.Join(DownloadDir, p.SuggestedFilename), CreatedAt: now.Format("2006-01-02T15:04:05.000Z"), State: "inProgress"})
				keys = append(keys, k)
				for len(keys) > maxDownloads {
					_, _ = state.Delete(keys[0])
					keys = keys[1:]
				}
			case "Page.downloadProgress":
				k := downloadKey(keys, p.GUID)
				if k == "" {
					continue
				}
				if p.State == "canceled" {
					_, _ = state.Delete(k)
					continue
				}
				v, ok, _ := state.Get(k)
				var d download
				if !ok || json.Unmarshal([]byte(v), &d) != nil {
					continue
				}
				d.State = p.State
				d.Progress = 0
				if p.TotalBytes > 0 {
					d.Progress = p.ReceivedBytes / p.TotalBytes * 100
				}
				saveDownload(k, d)
			}
		}
	}
	return loadDownloads()
}

// downloadList answers the downloads of every open tab.
func downloadList(*sdk.Ctx, json.RawMessage) (*sdk.Result, error) {
	tabs, _, err := tabList0()
	if err == nil {
		for i, t := range tabs {
			if i == 15 {
				break // the host's session bound
			}
			if s, err := cdp.Attach(t.TargetID); err == nil {
				syncDownloads(s, 0)
			}
		}
	}
	list := loadDownloads()
	content := map[string]any{"list": list}
	b, _ := json.Marshal(content)
	return &sdk.Result{Content: []sdk.Content{sdk.Text(unescapeHTML(b))}, Structured: content}, nil
}
