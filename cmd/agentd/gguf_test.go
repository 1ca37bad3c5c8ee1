package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
)

// A GGUF writer (version 3, F32 tensors only) and the tiny model the llama-server tests run.
//
// The model is a llama architecture of one layer whose attention and feed-forward weights are
// all zero, so the residual stream after the layer is the current token's embedding: the next
// token is a function of the current one alone (a bigram table), and greedy or not, a logit
// margin of hundreds makes every sampler pick it. Each token that starts or continues a script
// gets its own embedding dimension, and the output matrix maps it to the script's next token;
// every other token leads to end-of-generation. The chat template ends the prompt with a
// trigger token chosen by the conversation: <|call|> after the user's message (the model then
// writes a tool call), <|answer|> after a tool result (the final answer), <|loop|> when the
// user's message ends in LOOP (the model repeats one token until max_tokens: a request that
// stays on its slot). Scripted pieces are user-defined tokens, so each comes out as its whole
// text, and the tool call is split over two of them (the server streams it in pieces).
// The template renders past tool calls the way the model writes them, which is what
// llama-server's template analysis needs to parse them (<tool_call>{json}</tool_call>).

// ggufWriter accumulates metadata and tensors and serialises them (Bytes).
type ggufWriter struct {
	kv      bytes.Buffer
	nkv     uint64
	tensors []ggufTensor
}

type ggufTensor struct {
	name string
	dims []uint64 // innermost first, as GGUF has them
	data []float32
}

// GGUF value types.
const (
	ggufUint32  = 4
	ggufInt32   = 5
	ggufFloat32 = 6
	ggufBool    = 7
	ggufString  = 8
	ggufArray   = 9
)

const ggufAlignment = 32

func ggufWriteString(b *bytes.Buffer, s string) {
	binary.Write(b, binary.LittleEndian, uint64(len(s)))
	b.WriteString(s)
}

func (w *ggufWriter) key(k string, typ uint32) {
	w.nkv++
	ggufWriteString(&w.kv, k)
	binary.Write(&w.kv, binary.LittleEndian, typ)
}

func (w *ggufWriter) u32(k string, v uint32) {
	w.key(k, ggufUint32)
	binary.Write(&w.kv, binary.LittleEndian, v)
}

func (w *ggufWriter) f32(k string, v float32) {
	w.key(k, ggufFloat32)
	binary.Write(&w.kv, binary.LittleEndian, v)
}

func (w *ggufWriter) boolean(k string, v bool) {
	w.key(k, ggufBool)
	binary.Write(&w.kv, binary.LittleEndian, v)
}

func (w *ggufWriter) str(k, v string) {
	w.key(k, ggufString)
	ggufWriteString(&w.kv, v)
}

func (w *ggufWriter) strs(k string, v []string) {
	w.key(k, ggufArray)
	binary.Write(&w.kv, binary.LittleEndian, uint32(ggufString))
	binary.Write(&w.kv, binary.LittleEndian, uint64(len(v)))
	for _, s := range v {
		ggufWriteString(&w.kv, s)
	}
}

func (w *ggufWriter) i32s(k string, v []int32) {
	w.key(k, ggufArray)
	binary.Write(&w.kv, binary.LittleEndian, uint32(ggufInt32))
	binary.Write(&w.kv, binary.LittleEndian, uint64(len(v)))
	binary.Write(&w.kv, binary.LittleEndian, v)
}

func (w *ggufWriter) tensor(name string, data []float32, dims ...uint64) {
	w.tensors = append(w.tensors, ggufTensor{name, dims, data})
}

// Bytes is the file: header, metadata, tensor infos, then the aligned tensor data.
func (w *ggufWriter) Bytes() []byte {
	var b bytes.Buffer
	b.WriteString("GGUF")
	binary.Write(&b, binary.LittleEndian, uint32(3))
	binary.Write(&b, binary.LittleEndian, uint64(len(w.tensors)))
	binary.Write(&b, binary.LittleEndian, w.nkv)
	b.Write(w.kv.Bytes())
	pad := func(n int) int { return (n + ggufAlignment - 1) / ggufAlignment * ggufAlignment }
	off := 0
	for _, t := range w.tensors {
		ggufWriteString(&b, t.name)
		binary.Write(&b, binary.LittleEndian, uint32(len(t.dims)))
		binary.Write(&b, binary.LittleEndian, t.dims)
		binary.Write(&b, binary.LittleEndian, uint32(0)) // GGML_TYPE_F32
		binary.Write(&b, binary.LittleEndian, uint64(off))
		off += pad(4 * len(t.data))
	}
	b.Write(make([]byte, pad(b.Len())-b.Len()))
	for _, t := range w.tensors {
		for _, f := range t.data {
			binary.Write(&b, binary.LittleEndian, math.Float32bits(f))
		}
		b.Write(make([]byte, pad(4*len(t.data))-4*len(t.data)))
	}
	return b.Bytes()
}

// tinyTemplate is the tiny model's chat template (see above).
const tinyTemplate = `{%- if messages[0].role == 'system' -%}<|sys|>{{ messages[0].content }}{%- endif -%}
{%- if tools -%}<|tools|>{%- for t in tools -%}{{ t | tojson }}{%- endfor -%}{%- endif -%}
{%- for m in messages -%}
{%- if m.role == 'user' -%}<|user|>{{ m.content }}
{%- elif m.role == 'assistant' -%}<|asst|>{%- if m.content -%}{{ m.content }}{%- endif -%}
{%- if m.tool_calls -%}{%- for tc in m.tool_calls -%}<tool_call>
{"name": "{{ tc.function.name }}", "arguments": {{ tc.function.arguments | tojson }}}
</tool_call>{%- endfor -%}{%- endif -%}<|eos|>
{%- elif m.role == 'tool' -%}<|tool|>{{ m.content }}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
{%- if messages[-1].role == 'tool' -%}<|answer|>
{%- elif messages[-1].content is string and messages[-1].content.endswith('LOOP') -%}<|loop|>
{%- else -%}<|call|>{%- endif -%}
{%- endif -%}`

// The tiny model's scripts: what it writes after each trigger.
var (
	tinyCall   = []string{"<tool_call>\n{\"name\": \"read\", \"arguments\": {\"pa", "th\": \"hello.txt\"}}\n</tool_call>"}
	tinyAnswer = []string{"The file says hello", ", and nothing else."}
)

// tinyModel builds the GGUF of the tiny model.
func tinyModel() []byte {
	// Byte-level BPE vocabulary: the 256 bytes in GPT-2's printable encoding, so any prompt
	// tokenizes (one token per byte), then the control and scripted tokens.
	var tokens []string
	var types []int32 // 1 normal, 3 control, 4 user-defined
	shifted := 0
	for c := 0; c < 256; c++ {
		r := rune(c)
		if !(c >= '!' && c <= '~' || c >= 0xA1 && c <= 0xAC || c >= 0xAE) {
			r = rune(256 + shifted)
			shifted++
		}
		tokens, types = append(tokens, string(r)), append(types, 1)
	}
	add := func(text string, typ int32) int {
		tokens, types = append(tokens, text), append(types, typ)
		return len(tokens) - 1
	}
	eos := add("<|eos|>", 3)
	for _, s := range []string{"<|sys|>", "<|tools|>", "<|user|>", "<|asst|>", "<|tool|>"} {
		add(s, 3)
	}
	next := map[int]int{} // the bigram table; tokens not in it lead to eos
	script := func(trigger string, pieces []string) {
		prev := add(trigger, 3)
		for _, p := range pieces {
			t := add(p, 4)
			next[prev], prev = t, t
		}
		next[prev] = eos
	}
	script("<|call|>", tinyCall)
	script("<|answer|>", tinyAnswer)
	loop := add("<|loop|>", 3)
	next[loop] = add("~~", 4)
	next[next[loop]] = next[loop]

	const dim, ff = 32, 32
	n := len(tokens)
	embd, out := make([]float32, n*dim), make([]float32, n*dim)
	k := 0
	for tok := 0; tok < n; tok++ {
		nx, scripted := next[tok]
		d := 0 // every unscripted token shares dimension 0, which leads to eos
		if scripted {
			k++
			d = k
		} else {
			nx = eos
		}
		embd[tok*dim+d] = 1
		out[nx*dim+d] = 50
	}
	ones := make([]float32, dim)
	for i := range ones {
		ones[i] = 1
	}
	var w ggufWriter
	w.str("general.architecture", "llama")
	w.str("general.name", "agentd-tiny")
	w.u32("llama.context_length", 65536)
	w.u32("llama.embedding_length", dim)
	w.u32("llama.block_count", 1)
	w.u32("llama.feed_forward_length", ff)
	w.u32("llama.attention.head_count", 2)
	w.u32("llama.attention.head_count_kv", 2)
	w.f32("llama.attention.layer_norm_rms_epsilon", 1e-5)
	w.u32("llama.rope.dimension_count", dim/2)
	w.str("tokenizer.ggml.model", "gpt2")
	w.str("tokenizer.ggml.pre", "default")
	w.strs("tokenizer.ggml.tokens", tokens)
	w.i32s("tokenizer.ggml.token_type", types)
	w.strs("tokenizer.ggml.merges", []string{"Ġ t"}) // required; merges matter not here
	w.u32("tokenizer.ggml.bos_token_id", uint32(eos))
	w.u32("tokenizer.ggml.eos_token_id", uint32(eos))
	w.boolean("tokenizer.ggml.add_bos_token", false)
	w.str("tokenizer.chat_template", strings.TrimSpace(tinyTemplate))
	w.tensor("token_embd.weight", embd, dim, uint64(n))
	w.tensor("output_norm.weight", ones, dim)
	w.tensor("output.weight", out, dim, uint64(n))
	w.tensor("blk.0.attn_norm.weight", ones, dim)
	for _, name := range []string{"attn_q", "attn_k", "attn_v", "attn_output"} {
		w.tensor("blk.0."+name+".weight", make([]float32, dim*dim), dim, dim)
	}
	w.tensor("blk.0.ffn_norm.weight", ones, dim)
	w.tensor("blk.0.ffn_gate.weight", make([]float32, dim*ff), dim, ff)
	w.tensor("blk.0.ffn_up.weight", make([]float32, dim*ff), dim, ff)
	w.tensor("blk.0.ffn_down.weight", make([]float32, dim*ff), ff, dim)
	return w.Bytes()
}
