package rpc

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.lsp.dev/jsonrpc2"
)

// hunkReasons: a reason per rejected hunk, with a partial accept or a reject; never for an
// accepted hunk, never blank, never with the other decision types.
func TestHunkReasonsDecoding(t *testing.T) {
	good := []string{
		`{"reviewId":"r","decision":{"type":"accept","hunks":["a"],"hunkReasons":{"b":"not this one"}}}`,
		`{"reviewId":"r","decision":{"type":"accept","hunks":["a"],"reason":"overall","hunkReasons":{"b":"x","c":"y"}}}`,
		`{"reviewId":"r","decision":{"type":"reject","hunkReasons":{"a":"x"}}}`,
		`{"reviewId":"r","decision":{"type":"reject","reason":"no","hunkReasons":{"a":"x","b":"y"}}}`,
	}
	bad := map[string]string{
		`{"reviewId":"r","decision":{"type":"accept","hunkReasons":{"a":"x"}}}`:                                                 "accepts every hunk",
		`{"reviewId":"r","decision":{"type":"accept","hunks":["a"],"hunkReasons":{"a":"x"}}}`:                                   `hunk "a" is accepted`,
		`{"reviewId":"r","decision":{"type":"reject","hunkReasons":{"a":" "}}}`:                                                 "blank",
		`{"reviewId":"r","decision":{"type":"reject","hunkReasons":{"":"x"}}}`:                                                  "non-empty",
		`{"reviewId":"r","decision":{"type":"reject","hunkReasons":{}}}`:                                                        "empty",
		`{"reviewId":"r","decision":{"type":"reject","hunkReasons":{"a":1}}}`:                                                   "",
		`{"reviewId":"r","decision":{"type":"cancelTurn","hunkReasons":{"a":"x"}}}`:                                             "cancelTurn",
		`{"reviewId":"r","decision":{"type":"acceptForSession","scope":{"kind":"tool","tool":"edit"},"hunkReasons":{"a":"x"}}}`: "only a scope",
		`{"reviewId":"r","decision":{"type":"reject","hunkReason":{"a":"x"}}}`:                                                  "",
	}
	for _, g := range good {
		p, err := DecodeDecide(json.RawMessage(g))
		if err != nil {
			t.Errorf("%s: %v", g, err)
		} else if len(p.Decision.HunkReasons) == 0 {
			t.Errorf("%s: hunkReasons lost in decoding", g)
		}
	}
	for b, want := range bad {
		_, err := DecodeDecide(json.RawMessage(b))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", b, err, want)
			continue
		}
		var e *jsonrpc2.Error
		if !errors.As(err, &e) || e.Code != CodeInvalidParams {
			t.Errorf("%s: %#v, want code %d", b, err, CodeInvalidParams)
		}
	}
}
