package tools

import (
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// node is one schema as our walker reads it, for two jobs the validating library does not do:
// safe coercion (coerce.go) and listing every problem of invalid arguments, each at its JSON
// pointer (problems, below). It never decides validity on its own: google/jsonschema-go does
// (spec.go), and the list explains a verdict of that library. What the walker does not
// understand (a $ref by $id or anchor, $dynamicRef, unevaluated*) makes the node opaque: no
// coercion there and no problem listed, so the library's own message is reported instead.
type node struct {
	Type       typeList
	Properties map[string]*node
	Required   []string
	Items      *node // "items" as one schema (2020-12 and draft-07), the rest after prefix

	never  bool  // the false schema
	opaque bool  // a part the walker does not follow: it lists no problem there
	ref    *node // $ref, resolved (may be cyclic)
	draft7 bool  // $ref's siblings are ignored

	enum     []any
	hasConst bool
	constant any

	multipleOf, minimum, maximum, exclMinimum, exclMaximum *big.Rat
	minLength, maxLength, minItems, maxItems               *int
	minProps, maxProps, minContains, maxContains           *int
	pattern                                                *regexp.Regexp
	uniqueItems                                            bool

	prefix          []*node // prefixItems, or draft-07's array form of items
	contains        *node
	additional      *node // additionalProperties
	hasAdditional   bool
	patternProps    []patternProp
	propertyNames   *node
	dependentReq    map[string][]string
	dependentSchema map[string]*node

	allOf, anyOf, oneOf []*node
	not, ifN, thenN     *node
	elseN               *node
}

type patternProp struct {
	re *regexp.Regexp
	n  *node
}

// typeList is the "type" keyword: "x" or ["x", "y"].
type typeList []string

func (t typeList) has(k string) bool { return slices.Contains(t, k) }

var jsonTypes = []string{"null", "boolean", "object", "array", "number", "string", "integer"}

// parseNode reads a parsed schema document (numbers as json.Number). It returns an error only
// for what no validator could use: a type name that does not exist, a pattern Go cannot compile.
func parseNode(doc any, draft7 bool) (*node, error) {
	p := &nodeParser{doc: doc, refs: map[string]*node{}, draft7: draft7}
	n := p.parse(doc)
	return n, p.err
}

type nodeParser struct {
	doc    any
	refs   map[string]*node // by reference, so a recursive schema gives a cyclic graph, not a loop
	draft7 bool
	err    error
}

func (p *nodeParser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf(format, args...)
	}
}

func (p *nodeParser) parse(v any) *node {
	switch v := v.(type) {
	case bool:
		if v {
			return nil
		}
		return &node{never: true}
	case map[string]any:
		return p.parseObject(v)
	}
	return nil // the library refuses a schema of another JSON type
}

func (p *nodeParser) list(v any) []*node {
	arr, _ := v.([]any)
	out := make([]*node, 0, len(arr))
	for _, e := range arr {
		out = append(out, p.parse(e))
	}
	return out
}

func (p *nodeParser) parseObject(m map[string]any) *node {
	n := &node{draft7: p.draft7}
	if id, ok := m["$id"].(string); ok && id != "" && !p.isRoot(m) {
		// A new base URI: references inside are relative to it. Left to the library.
		return &node{opaque: true}
	}
	for _, k := range []string{"$dynamicRef", "$recursiveRef", "unevaluatedProperties", "unevaluatedItems"} {
		if _, ok := m[k]; ok {
			n.opaque = true
		}
	}
	if ref, ok := m["$ref"].(string); ok {
		if !strings.HasPrefix(ref, "#") || (len(ref) > 1 && ref[1] != '/') {
			n.opaque = true // an anchor or a URI: the library resolved it (or refused the schema)
		} else if r, ok := p.refs[ref]; ok {
			n.ref = r
		} else {
			r := &node{}
			p.refs[ref] = r
			if target := p.parse(resolvePointer(p.doc, ref[1:])); target != nil {
				*r = *target
			}
			n.ref = r
		}
		if p.draft7 {
			return n
		}
	}
	switch t := m["type"].(type) {
	case string:
		n.Type = typeList{t}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				n.Type = append(n.Type, s)
			}
		}
	}
	for _, t := range n.Type {
		if !slices.Contains(jsonTypes, t) {
			p.fail("type %q is not a JSON type", t)
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		n.Properties = make(map[string]*node, len(props))
		for k, pv := range props {
			if c := p.parse(pv); c != nil {
				n.Properties[k] = c
			}
		}
	}
	n.Required = stringList(m["required"])
	if e, ok := m["enum"].([]any); ok {
		n.enum = e
	}
	if c, ok := m["const"]; ok {
		n.hasConst, n.constant = true, c
	}
	n.multipleOf, n.minimum, n.maximum = rat(m["multipleOf"]), rat(m["minimum"]), rat(m["maximum"])
	n.exclMinimum, n.exclMaximum = rat(m["exclusiveMinimum"]), rat(m["exclusiveMaximum"])
	n.minLength, n.maxLength = count(m["minLength"]), count(m["maxLength"])
	n.minItems, n.maxItems = count(m["minItems"]), count(m["maxItems"])
	n.minProps, n.maxProps = count(m["minProperties"]), count(m["maxProperties"])
	n.minContains, n.maxContains = count(m["minContains"]), count(m["maxContains"])
	if s, ok := m["pattern"].(string); ok {
		n.pattern = p.regexp(s)
	}
	n.uniqueItems = m["uniqueItems"] == true
	switch items := m["items"].(type) {
	case []any: // draft-07 tuple
		n.prefix = p.list(items)
		n.Items = p.parse(m["additionalItems"])
	default:
		if pi, ok := m["prefixItems"]; ok {
			n.prefix = p.list(pi)
		}
		n.Items = p.parse(items)
	}
	n.contains = p.parse(m["contains"])
	if a, ok := m["additionalProperties"]; ok {
		n.hasAdditional, n.additional = true, p.parse(a)
	}
	if pp, ok := m["patternProperties"].(map[string]any); ok {
		keys := make([]string, 0, len(pp))
		for k := range pp {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			n.patternProps = append(n.patternProps, patternProp{p.regexp(k), p.parse(pp[k])})
		}
	}
	n.propertyNames = p.parse(m["propertyNames"])
	deps := map[string]any{}
	for _, k := range []string{"dependencies", "dependentRequired", "dependentSchemas"} {
		if d, ok := m[k].(map[string]any); ok {
			for dk, dv := range d {
				deps[dk] = dv
			}
		}
	}
	for k, dv := range deps {
		if arr, ok := dv.([]any); ok {
			if n.dependentReq == nil {
				n.dependentReq = map[string][]string{}
			}
			n.dependentReq[k] = stringList(arr)
		} else if c := p.parse(dv); c != nil {
			if n.dependentSchema == nil {
				n.dependentSchema = map[string]*node{}
			}
			n.dependentSchema[k] = c
		}
	}
	n.allOf, n.anyOf, n.oneOf = p.list(m["allOf"]), p.list(m["anyOf"]), p.list(m["oneOf"])
	n.not = p.parse(m["not"])
	if _, ok := m["not"]; ok && n.not == nil {
		n.not = &node{} // not: true
	}
	if _, ok := m["if"]; ok {
		n.ifN = p.parse(m["if"])
		if n.ifN == nil {
			n.ifN = &node{}
		}
		n.thenN, n.elseN = p.parse(m["then"]), p.parse(m["else"])
	}
	return n
}

func (p *nodeParser) isRoot(m map[string]any) bool {
	root, ok := p.doc.(map[string]any)
	return ok && reflect.ValueOf(root).UnsafePointer() == reflect.ValueOf(m).UnsafePointer()
}

func (p *nodeParser) regexp(s string) *regexp.Regexp {
	re, err := regexp.Compile(s)
	if err != nil {
		p.fail("pattern %q: %v", s, err)
		return nil
	}
	return re
}

func stringList(v any) []string {
	arr, _ := v.([]any)
	var out []string
	for _, e := range arr {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func rat(v any) *big.Rat {
	if num, ok := v.(json.Number); ok {
		if r, ok := new(big.Rat).SetString(string(num)); ok {
			return r
		}
	}
	return nil
}

func count(v any) *int {
	if r := rat(v); r != nil && r.IsInt() && r.Num().IsInt64() {
		c := int(r.Num().Int64())
		return &c
	}
	return nil
}

// resolvePointer returns the value at a JSON pointer ("/$defs/item") in doc, or nil.
func resolvePointer(doc any, ptr string) any {
	if ptr == "" {
		return doc
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := doc.(type) {
		case map[string]any:
			doc = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			doc = c[i]
		default:
			return nil
		}
	}
	return doc
}

// problems lists what is wrong with v (arguments after coercion) at every JSON pointer, one
// line each, sorted. An empty list means the walker found nothing; the library still decides.
func (n *node) problems(v any) []string {
	var out []string
	n.check(v, nil, &out, 0)
	sort.Strings(out)
	return slices.Compact(out)
}

// valid reports whether the walker finds no problem in v.
func (n *node) valid(v any, depth int) bool {
	var out []string
	n.check(v, nil, &out, depth)
	return len(out) == 0
}

const maxCheckDepth = 64 // a cyclic schema over deep arguments ends here (listing only)

func (n *node) check(v any, at []string, out *[]string, depth int) {
	if n == nil || n.opaque || depth > maxCheckDepth {
		return
	}
	add := func(format string, args ...any) {
		*out = append(*out, pointer(at)+": "+fmt.Sprintf(format, args...))
	}
	if n.never {
		add("no value is allowed here")
		return
	}
	if n.ref != nil {
		n.ref.check(v, at, out, depth+1)
		if n.draft7 {
			return
		}
	}
	if len(n.Type) > 0 && !typeMatches(n.Type, v) {
		want := strings.Join(n.Type, " or ")
		add("want %s, got %s", want, describe(v))
		return // the type's own keywords would only repeat it
	}
	if n.enum != nil && !slices.ContainsFunc(n.enum, func(e any) bool { return jsonEqual(e, v) }) {
		add("%s is not one of %s", describe(v), compactJSON(n.enum))
	}
	if n.hasConst && !jsonEqual(n.constant, v) {
		add("%s is not %s", describe(v), compactJSON(n.constant))
	}
	switch x := v.(type) {
	case json.Number:
		n.checkNumber(x, add)
	case string:
		l := utf8.RuneCountInString(x)
		if n.minLength != nil && l < *n.minLength {
			add("%s is shorter than %d characters", describe(v), *n.minLength)
		}
		if n.maxLength != nil && l > *n.maxLength {
			add("%s is longer than %d characters", describe(v), *n.maxLength)
		}
		if n.pattern != nil && !n.pattern.MatchString(x) {
			add("%s does not match the pattern %s", describe(v), n.pattern)
		}
	case []any:
		n.checkArray(x, at, out, add, depth)
	case map[string]any:
		n.checkObject(x, at, out, add, depth)
	}
	for _, s := range n.allOf {
		s.check(v, at, out, depth+1)
	}
	if len(n.anyOf) > 0 && !slices.ContainsFunc(n.anyOf, func(s *node) bool { return s.valid(v, depth+1) }) {
		add("%s matches none of the allowed alternatives (anyOf)", describe(v))
	}
	if len(n.oneOf) > 0 {
		matched := 0
		for _, s := range n.oneOf {
			if s.valid(v, depth+1) {
				matched++
			}
		}
		if matched != 1 {
			add("%s matches %d of the alternatives, want exactly one (oneOf)", describe(v), matched)
		}
	}
	if n.not != nil && n.not.valid(v, depth+1) {
		add("%s matches a schema it must not match (not)", describe(v))
	}
	if n.ifN != nil {
		if n.ifN.valid(v, depth+1) {
			n.thenN.check(v, at, out, depth+1)
		} else {
			n.elseN.check(v, at, out, depth+1)
		}
	}
}

func (n *node) checkNumber(x json.Number, add func(string, ...any)) {
	r, ok := new(big.Rat).SetString(string(x))
	if !ok {
		return
	}
	if n.multipleOf != nil && n.multipleOf.Sign() != 0 && !new(big.Rat).Quo(r, n.multipleOf).IsInt() {
		add("%s is not a multiple of %s", x, n.multipleOf.RatString())
	}
	if n.minimum != nil && r.Cmp(n.minimum) < 0 {
		add("%s is less than the minimum %s", x, n.minimum.RatString())
	}
	if n.maximum != nil && r.Cmp(n.maximum) > 0 {
		add("%s is greater than the maximum %s", x, n.maximum.RatString())
	}
	if n.exclMinimum != nil && r.Cmp(n.exclMinimum) <= 0 {
		add("%s must be greater than %s", x, n.exclMinimum.RatString())
	}
	if n.exclMaximum != nil && r.Cmp(n.exclMaximum) >= 0 {
		add("%s must be less than %s", x, n.exclMaximum.RatString())
	}
}

func (n *node) checkArray(x []any, at []string, out *[]string, add func(string, ...any), depth int) {
	if n.minItems != nil && len(x) < *n.minItems {
		add("%d items, want at least %d", len(x), *n.minItems)
	}
	if n.maxItems != nil && len(x) > *n.maxItems {
		add("%d items, want at most %d", len(x), *n.maxItems)
	}
	for i, item := range x {
		s := n.Items
		if i < len(n.prefix) {
			s = n.prefix[i]
		}
		s.check(item, append(slices.Clip(at), strconv.Itoa(i)), out, depth+1)
	}
	if n.uniqueItems {
	dup:
		for i := range x {
			for j := i + 1; j < len(x); j++ {
				if jsonEqual(x[i], x[j]) {
					add("items %d and %d are equal; items must be unique", i, j)
					break dup
				}
			}
		}
	}
	if n.contains != nil {
		c := 0
		for _, item := range x {
			if n.contains.valid(item, depth+1) {
				c++
			}
		}
		lo := 1
		if n.minContains != nil {
			lo = *n.minContains
		}
		if c < lo {
			add("%d items match the contains schema, want at least %d", c, lo)
		}
		if n.maxContains != nil && c > *n.maxContains {
			add("%d items match the contains schema, want at most %d", c, *n.maxContains)
		}
	}
}

func (n *node) checkObject(x map[string]any, at []string, out *[]string, add func(string, ...any), depth int) {
	child := func(k string) []string { return append(slices.Clip(at), k) }
	for _, r := range n.Required {
		if _, ok := x[r]; !ok {
			*out = append(*out, pointer(child(r))+": required property is missing")
		}
	}
	for k, deps := range n.dependentReq {
		if _, ok := x[k]; !ok {
			continue
		}
		for _, d := range deps {
			if _, ok := x[d]; !ok {
				*out = append(*out, pointer(child(d))+": required when "+strconv.Quote(k)+" is given")
			}
		}
	}
	for k, s := range n.dependentSchema {
		if _, ok := x[k]; ok {
			s.check(x, at, out, depth+1)
		}
	}
	if n.minProps != nil && len(x) < *n.minProps {
		add("%d properties, want at least %d", len(x), *n.minProps)
	}
	if n.maxProps != nil && len(x) > *n.maxProps {
		add("%d properties, want at most %d", len(x), *n.maxProps)
	}
	for k, pv := range x {
		if n.propertyNames != nil {
			n.propertyNames.check(k, child(k), out, depth+1)
		}
		s, declared := n.Properties[k]
		if declared {
			s.check(pv, child(k), out, depth+1)
		}
		for _, pp := range n.patternProps {
			if pp.re != nil && pp.re.MatchString(k) {
				declared = true
				pp.n.check(pv, child(k), out, depth+1)
			}
		}
		if declared || !n.hasAdditional {
			continue
		}
		if n.additional != nil && n.additional.never {
			*out = append(*out, pointer(child(k))+": unknown property")
			continue
		}
		n.additional.check(pv, child(k), out, depth+1)
	}
}

func typeMatches(types typeList, v any) bool {
	for _, t := range types {
		switch x := v.(type) {
		case nil:
			if t == "null" {
				return true
			}
		case bool:
			if t == "boolean" {
				return true
			}
		case string:
			if t == "string" {
				return true
			}
		case []any:
			if t == "array" {
				return true
			}
		case map[string]any:
			if t == "object" {
				return true
			}
		case json.Number:
			if t == "number" {
				return true
			}
			if t == "integer" {
				if r, ok := new(big.Rat).SetString(string(x)); ok && r.IsInt() {
					return true
				}
			}
		}
	}
	return false
}

// jsonEqual compares two JSON values as JSON does: numbers by value, objects by keys.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		rx, okx := new(big.Rat).SetString(string(x))
		ry, oky := new(big.Rat).SetString(string(y))
		return okx && oky && rx.Cmp(ry) == 0
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, jsonEqual)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// describe shows a value in a problem line: short values whole, long ones by kind.
func describe(v any) string {
	s := compactJSON(v)
	if len(s) > 40 {
		return jsonKind(v)
	}
	return jsonKind(v) + " " + s
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
