package live

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseClient feeds the client message decoder arbitrary bytes, as a page or
// any other websocket client may send them. It must never panic; the error reply
// it leads to must be valid JSON that carries the id back; and a message it
// accepts must mean the same when encoded again from what was decoded.
func FuzzParseClient(f *testing.F) {
	for _, seed := range []string{
		`{"type":"hello","v":1,"scenario":"job","seed":7}`,
		`{"type":"hello","v":1,"scenario":"driver","seed":1,"options":{"cpu":"arm64"},"quirks":["iotlb-ignores-invalidate"],"profile":"upstream-v0.1","id":3}`,
		`{"type":"hello","v":1,"run":"recorded","exercise":"02-mmio-magic","id":"a"}`,
		`{"type":"hello","v":2,"scenario":{}}`,
		`{"type":"hello","v":1.0}`,
		`{"type":"inspect","seq":12,"line":"info rings","id":-1}`,
		`{"type":"inspect","seq":12,"run":"baseline"}`,
		`{"type":"inspect","line":"x"}`,
		`{"type":"ping","id":"\u2028"}`,
		`{"type":"ping","id":"a&b<c>"}`,
		`{"type":"ping","id":null}`,
		`{"type":"ping","id":true}`,
		`{"type":"nope"}`,
		`{"type":1}`,
		`{"id":1e400}`,
		`[]`, `null`, `"hello"`, ``, `{`, "{\"type\":\"ping\"}\x00",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseClient(data)
		if err != nil {
			// What handle sends back.
			reply := errorMessage(codeBadRequest, err.Error(), m.ID)
			checkReply(t, reply, m.ID)
			return
		}
		switch m.Type {
		case "hello", "inspect", "ping":
		default:
			t.Fatalf("accepted a message of type %q", m.Type)
		}
		if m.Type == "inspect" && !m.HasSeq {
			t.Fatal("accepted an inspect without seq")
		}
		if m.HasV && !versionOK(m) {
			t.Fatalf("HasV with version %q", m.V)
		}
		checkReply(t, errorMessage(codeFailed, "x", m.ID), m.ID)

		again, err := parseClient(reencode(t, m))
		if err != nil {
			t.Fatalf("%s decoded as %+v, which encoded again is refused: %v", data, m, err)
		}
		if !reflect.DeepEqual(again, m) {
			t.Fatalf("%s decoded as\n%+v\nand encoded again as\n%+v", data, m, again)
		}
	})
}

// checkReply checks that a server reply is one JSON object with the given id.
func checkReply(t *testing.T, reply []byte, id json.RawMessage) {
	t.Helper()
	var got struct {
		Type string          `json:"type"`
		ID   json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(reply, &got); err != nil {
		t.Fatalf("the reply %q is not JSON: %v", reply, err)
	}
	if got.Type != "error" || string(got.ID) != string(compactJSON(t, id)) {
		t.Fatalf("the reply %s does not carry the id %s", reply, id)
	}
	if strings.ContainsAny(string(reply), "\n") {
		t.Fatalf("the reply %q spans lines", reply)
	}
}

func compactJSON(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	if raw == nil {
		return nil
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(raw); err != nil {
		t.Fatalf("the id %q is not JSON: %v", raw, err)
	}
	return []byte(strings.TrimSuffix(b.String(), "\n"))
}

// reencode writes what parseClient decoded back as a client message.
func reencode(t *testing.T, m clientMsg) []byte {
	t.Helper()
	out := map[string]any{"type": m.Type}
	if m.V != "" {
		out["v"] = m.V
	}
	if m.ID != nil {
		out["id"] = m.ID
	}
	if m.Scenario != "" {
		out["scenario"] = m.Scenario
	}
	if m.HasSeed {
		out["seed"] = m.Seed
	}
	if m.Options != nil {
		out["options"] = m.Options
	}
	if m.Quirks != nil {
		out["quirks"] = m.Quirks
	}
	if m.Profile != "" {
		out["profile"] = m.Profile
	}
	if m.HasSeq {
		out["seq"] = m.Seq
	}
	if m.Line != "" {
		out["line"] = m.Line
	}
	if m.Run != "" {
		out["run"] = m.Run
	}
	if m.Exercise != "" {
		out["exercise"] = m.Exercise
	}
	// As a browser's JSON.stringify writes it: without HTML escapes, which would
	// change the id's raw text.
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		t.Fatalf("encoding %+v: %v", m, err)
	}
	return []byte(b.String())
}
