package toolsearch

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"sync"
	"unicode"
)

// The lexical index: BM25 (Robertson and Zaragoza's Okapi BM25, k1 = 1.2,
// b = 0.75) over one document per tool, whose fields weigh what they say
// of the tool: every word of the name counts three times, of the title
// twice, of the description, the input property names and their
// descriptions once. Words are split on anything not a letter or digit and
// at camelCase humps, lowercased, stripped of a few stop words and of their
// inflections (stem). RATIONALE.md, "Tool search: a BM25 index written
// here", says why it is written here.

// BM25's parameters.
const (
	k1 = 1.2
	b  = 0.75
)

// Field weights: how many times each word of the field counts.
const (
	weightName     = 3
	weightTitle    = 2
	weightDesc     = 1
	weightProperty = 1
)

// tool is one tool of the catalogue as the index keeps it.
type tool struct {
	name  string
	title string          // its title, or annotations.title; "" when none
	line  string          // the first line of its description, at most lineMax bytes
	def   json.RawMessage // its definition as tools/list gives it
}

// lineMax bounds a result's one-line description.
const lineMax = 200

type posting struct {
	doc int32
	tf  float32 // weighted term frequency
}

// index is the catalogue of one listing, searchable. It never changes once
// built.
type index struct {
	src    []byte // the listing it was built from
	tools  []tool
	byName map[string]int
	terms  map[string][]posting
	length []float32 // each document's weighted length
	avg    float64
	short  sync.Map // doc → its short definition (shortDef), made when first listed
}

// shortDef is tool doc's short definition, made once.
func (ix *index) shortDef(doc int) json.RawMessage {
	if d, ok := ix.short.Load(doc); ok {
		return d.(json.RawMessage)
	}
	d, _ := ix.short.LoadOrStore(doc, shortDef(ix.tools[doc].def))
	return d.(json.RawMessage)
}

// buildIndex indexes the tools of listing, a JSON array of tool objects (a
// tools/list rendering). Items that are not tool objects with a name are
// left out; a later duplicate of a name too.
func buildIndex(listing []byte) (*index, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(listing, &items); err != nil {
		return nil, err
	}
	ix := &index{src: listing, byName: make(map[string]int, len(items)), terms: map[string][]posting{}}
	counts := map[string]float32{}
	for _, it := range items {
		var d struct {
			Name        string `json:"name"`
			Title       string `json:"title"`
			Description string `json:"description"`
			Annotations struct {
				Title string `json:"title"`
			} `json:"annotations"`
			InputSchema struct {
				Properties map[string]struct {
					Description string `json:"description"`
				} `json:"properties"`
			} `json:"inputSchema"`
		}
		if json.Unmarshal(it, &d) != nil {
			// a schema of another shape (a boolean schema, say): index the
			// rest of the tool
			d.InputSchema.Properties = nil
			var head struct {
				Name        string `json:"name"`
				Title       string `json:"title"`
				Description string `json:"description"`
			}
			if json.Unmarshal(it, &head) != nil {
				continue
			}
			d.Name, d.Title, d.Description = head.Name, head.Title, head.Description
		}
		if d.Name == "" {
			continue
		}
		if _, dup := ix.byName[d.Name]; dup {
			continue
		}
		title := d.Title
		if title == "" {
			title = d.Annotations.Title
		}
		doc := int32(len(ix.tools))
		ix.byName[d.Name] = len(ix.tools)
		ix.tools = append(ix.tools, tool{name: d.Name, title: title, line: firstLine(d.Description), def: it})
		clear(counts)
		var n float32
		add := func(text string, w float32) {
			for _, t := range terms(text) {
				counts[t] += w
				n += w
			}
		}
		add(d.Name, weightName)
		counts[strings.ToLower(d.Name)] += weightName // the whole name: a query naming the tool finds it first
		add(title, weightTitle)
		add(d.Description, weightDesc)
		props := make([]string, 0, len(d.InputSchema.Properties))
		for p := range d.InputSchema.Properties {
			props = append(props, p)
		}
		sort.Strings(props)
		for _, p := range props {
			add(p, weightProperty)
			add(d.InputSchema.Properties[p].Description, weightProperty)
		}
		for t, tf := range counts {
			ix.terms[t] = append(ix.terms[t], posting{doc: doc, tf: tf})
		}
		ix.length = append(ix.length, n)
		ix.avg += float64(n)
	}
	if len(ix.tools) > 0 {
		ix.avg /= float64(len(ix.tools))
	}
	return ix, nil
}

// hit is one search result.
type hit struct {
	doc   int
	score float64
}

// search ranks the tools keep admits for query, best first, at most limit
// of them; tools that share no word with the query are not found.
func (ix *index) search(query string, limit int, keep func(name string) bool) []hit {
	q := terms(query)
	for _, w := range strings.Fields(strings.ToLower(query)) {
		if strings.ContainsAny(w, "_-") {
			q = append(q, w) // a tool's whole name
		}
	}
	if len(q) == 0 || len(ix.tools) == 0 {
		return nil
	}
	scores := make([]float64, len(ix.tools))
	seen := make(map[string]bool, len(q))
	n := float64(len(ix.tools))
	for _, t := range q {
		if seen[t] {
			continue
		}
		seen[t] = true
		ps := ix.terms[t]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			norm := 1 - b + b*float64(ix.length[p.doc])/ix.avg
			scores[p.doc] += idf * tf * (k1 + 1) / (tf + k1*norm)
		}
	}
	hits := make([]hit, 0, 32)
	for d, s := range scores {
		if s > 0 && (keep == nil || keep(ix.tools[d].name)) {
			hits = append(hits, hit{d, s})
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].doc < hits[j].doc // catalogue order breaks ties
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}

// firstLine is the first line of s, trimmed, cut at lineMax bytes on a
// word boundary when longer (with "…").
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return clip(s, lineMax)
}

// terms splits text into index terms: words of letters and digits (split
// at camelCase humps: "pullNumber" is "pull" and "number"), lowercased,
// without stop words, stemmed.
func terms(text string) []string {
	var out []string
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		w := strings.ToLower(text[start:end])
		start = -1
		if stopWords[w] {
			return
		}
		out = append(out, stem(w))
	}
	var prev rune
	for i, r := range text {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if start >= 0 && unicode.IsUpper(r) && unicode.IsLower(prev) {
				flush(i) // a camelCase hump
			}
			if start < 0 {
				start = i
			}
		default:
			flush(i)
		}
		prev = r
	}
	flush(len(text))
	return out
}

// stopWords are words too common in tool descriptions and queries to tell
// tools apart.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "of": true, "to": true, "in": true, "on": true, "for": true, "and": true,
	"or": true, "with": true, "by": true, "is": true, "are": true, "be": true, "it": true, "its": true, "this": true,
	"that": true, "from": true, "as": true, "at": true, "into": true, "i": true, "me": true, "my": true, "we": true,
	"you": true, "your": true, "can": true, "do": true, "how": true, "which": true, "what": true, "will": true,
	"if": true, "when": true, "not": true, "no": true, "all": true, "any": true, "some": true, "want": true,
	"need": true, "should": true, "would": true, "please": true, "using": true, "use": true, "tool": true,
	"optional": true, "default": true, "e": true, "g": true, "eg": true,
}

// stem strips the common inflections of an English word, the same way for
// the index and the query (so "creating", "created" and "creates" all meet
// "create"): plural -s/-es/-ies, -ing, -ed, then a final -e. It is no
// linguist's stemmer, only consistent.
func stem(w string) string {
	n := len(w)
	switch {
	case n > 4 && strings.HasSuffix(w, "ies"):
		w = w[:n-3] + "y"
	case n > 4 && strings.HasSuffix(w, "sses"):
		w = w[:n-2]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:n-1]
	case n > 5 && strings.HasSuffix(w, "ing"):
		w = undouble(w[:n-3])
	case n > 4 && strings.HasSuffix(w, "ed"):
		w = undouble(w[:n-2])
	}
	if n := len(w); n > 3 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	return w
}

// undouble drops the second of a final doubled consonant ("runn" is "run").
func undouble(w string) string {
	n := len(w)
	if n > 2 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiouls", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}
