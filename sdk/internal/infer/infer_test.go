package infer_test

import (
	"encoding/json"
	"log/slog"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/aiodhq/aiod/sdk/internal/infer"
)

type Inner struct {
	X int `json:"x"`
}

type Embedded struct {
	E  string `json:"e" jsonschema:"from the embedded struct"`
	Sh string `json:"shadowed"`
}

type textKey string

func (k textKey) MarshalText() ([]byte, error) { return []byte(k), nil }

type intTextKey int

func (k intTextKey) MarshalText() ([]byte, error) { return []byte("k"), nil }

type Node struct {
	Next *Node `json:"next"`
}

type all struct {
	Embedded
	Shadowed  int               `json:"shadowed,omitempty"`
	Text      string            `json:"text" jsonschema:"the text <to> echo & more \"quoted\""`
	Opt       string            `json:"opt,omitempty"`
	Zero      string            `json:"zero,omitzero"`
	NoTag     bool              //
	Skipped   int               `json:"-"`
	unexp     int               //
	I         int               `json:"i"`
	I8        int8              `json:"i8"`
	I16       int16             `json:"i16"`
	I32       int32             `json:"i32"`
	I64       int64             `json:"i64"`
	U         uint              `json:"u"`
	U8        uint8             `json:"u8"`
	U16       uint16            `json:"u16"`
	U32       uint32            `json:"u32"`
	U64       uint64            `json:"u64"`
	F32       float32           `json:"f32"`
	F64       float64           `json:"f64"`
	Any       any               `json:"any"`
	AnyDesc   any               `json:"any_desc" jsonschema:"anything"`
	PAny      *any              `json:"pany"`
	PStr      *string           `json:"pstr"`
	PPInt     **int             `json:"ppint"`
	Strs      []string          `json:"strs"`
	PStrs     *[]string         `json:"pstrs"`
	Bytes     []byte            `json:"bytes"`
	Arr       [3]float64        `json:"arr"`
	PArr      *[2]bool          `json:"parr"`
	Map       map[string]int    `json:"map"`
	MapAny    map[string]any    `json:"map_any"`
	TextMap   map[textKey]Inner `json:"text_map"`
	IntText   map[intTextKey]string
	Nested    Inner      `json:"nested"`
	PNested   *Inner     `json:"pnested" jsonschema:"a pointer"`
	Nesteds   []Inner    `json:"nesteds"`
	Time      time.Time  `json:"time"`
	PTime     *time.Time `json:"ptime"`
	Level     slog.Level `json:"level"`
	BigInt    big.Int    `json:"big_int"`
	PBigRat   *big.Rat   `json:"big_rat"`
	BigFloat  big.Float  `json:"big_float"`
	EqInText  string     `json:"eq" jsonschema:"a b=c"`
	Anonymous struct {
		A string `json:"a"`
	} `json:"anonymous"`
}

type onlyUnexported struct{ a, b int }

// the unexported fields are there to be left out
var _, _ = all{unexp: 1}, onlyUnexported{a: 1, b: 2}

type empty struct{}

// TestMatchesJSONSchemaGo: For gives what jsonschema-go's For gives with no
// options, byte for byte, for every kind it supports, and refuses what it
// refuses.
func TestMatchesJSONSchemaGo(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[all](),
		reflect.TypeFor[*all](),
		reflect.TypeFor[Inner](),
		reflect.TypeFor[Node](),
		reflect.TypeFor[empty](),
		reflect.TypeFor[onlyUnexported](),
		reflect.TypeFor[string](),
		reflect.TypeFor[*int](),
		reflect.TypeFor[[]*Inner](),
		reflect.TypeFor[map[string][]int](),
		reflect.TypeFor[any](),
		reflect.TypeFor[json.RawMessage](),
		reflect.TypeFor[struct {
			P *struct {
				Q []map[string]*int8 `json:"q,omitempty"`
			} `json:"p"`
		}](),
	} {
		t.Run(typ.String(), func(t *testing.T) {
			want, werr := jsonschema.ForType(typ, nil)
			got, err := infer.For(typ)
			if werr != nil {
				if err == nil {
					t.Fatalf("jsonschema-go refuses %v (%v); For gave %s", typ, werr, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("For: %v", err)
			}
			wb, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(wb) {
				t.Errorf("For(%v):\n got %s\nwant %s", typ, got, wb)
			}
			if !json.Valid(got) {
				t.Errorf("not JSON: %s", got)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[map[int]string](), "unsupported map key type int"},
		{reflect.TypeFor[struct{ F func() }](), "unsupported"},
		{reflect.TypeFor[struct{ C chan int }](), "unsupported"},
		{reflect.TypeFor[complex128](), "unsupported"},
		{reflect.TypeFor[unsafe.Pointer](), "unsupported"},
		{reflect.TypeFor[[]func()](), "computing element schema"},
		{reflect.TypeFor[map[string]chan int](), "computing map value schema"},
		{reflect.TypeFor[struct {
			A string `json:"a" jsonschema:""`
		}](), "empty jsonschema tag"},
		{reflect.TypeFor[struct {
			A string `json:"a" jsonschema:"minimum=3"`
		}](), "WORD="},
		{reflect.TypeFor[cycle](), "cycle detected"},
	} {
		t.Run(tc.typ.String(), func(t *testing.T) {
			if _, err := jsonschema.ForType(tc.typ, nil); err == nil {
				t.Fatalf("jsonschema-go accepts %v: the case does not test a refusal", tc.typ)
			}
			_, err := infer.For(tc.typ)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("For(%v) = %v, want an error with %q", tc.typ, err, tc.want)
			}
		})
	}
}

type cycle struct {
	Self []cycle `json:"self"`
}
