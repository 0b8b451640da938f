package responses

import (
	"strings"
	"testing"
)

func TestProjectText(t *testing.T) {
	cases := map[string]string{
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello, ","annotations":[]},{"type":"output_text","text":"world."}]}`: "Hello, world.",
		`{"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"No."}]}`:                                                              "No.",
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Partly."},{"type":"refusal","refusal":"No more."}]}`:                 "Partly.",
		`{"type":"message","role":"user","content":"plain string content"}`:                                                                                 "plain string content",
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"typed"},{"type":"input_image","image_url":"x"}]}`:                          "typed",
		`{"type":"message","role":"assistant","content":[]}`:                                                                                                "",
	}
	for native, want := range cases {
		if got, err := ProjectText([]byte(native)); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", native, got, err, want)
		}
	}
	for _, bad := range []string{`{"type":"reasoning","summary":[]}`, `[]`, `{"content":"no type"}`} {
		if _, err := ProjectText([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestProjectReasoning(t *testing.T) {
	cases := map[string]string{
		`{"type":"reasoning","encrypted_content":"gAAAA-secret","summary":[{"type":"summary_text","text":"First."},{"type":"summary_text","text":"Second."}]}`: "First.\n\nSecond.",
		`{"type":"reasoning","encrypted_content":"gAAAA-secret","summary":[]}`:                                                                                 "",
		// gpt-oss behind a compatible server: raw reasoning text, no summary.
		`{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"Let me think."}]}`: "Let me think.",
		// A summary wins over raw text.
		`{"type":"reasoning","summary":[{"type":"summary_text","text":"Short."}],"content":[{"type":"reasoning_text","text":"Long."}]}`: "Short.",
	}
	for native, want := range cases {
		got, err := ProjectReasoning([]byte(native))
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", native, got, err, want)
		}
		if strings.Contains(got, "secret") {
			t.Errorf("%s: encrypted content shown", native)
		}
	}
	if _, err := ProjectReasoning([]byte(`{"type":"message","content":[]}`)); err == nil {
		t.Error("a message projected as reasoning")
	}
}

func TestProjectCitations(t *testing.T) {
	native := `{"type":"message","content":[
		{"type":"output_text","text":"a","annotations":[{"type":"url_citation","start_index":0,"end_index":1,"url":"https://a.example/?q=1&r=2","title":"A"}]},
		{"type":"output_text","text":"b","annotations":[]},
		{"type":"output_text","text":"c","annotations":[{"type":"file_citation","index":0,"file_id":"file-1","filename":"c.pdf"},{"type":"container_file_citation","x":1.50}]}]}`
	got, err := ProjectCitations([]byte(native))
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"url_citation","start_index":0,"end_index":1,"url":"https://a.example/?q=1&r=2","title":"A"},{"type":"file_citation","index":0,"file_id":"file-1","filename":"c.pdf"},{"type":"container_file_citation","x":1.50}]`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got, err := ProjectCitations([]byte(`{"type":"message","content":[{"type":"output_text","text":"x","annotations":[]}]}`)); err != nil || got != nil {
		t.Fatalf("no annotations: %s, %v", got, err)
	}
	if _, err := ProjectCitations([]byte(`{"type":"web_search_call"}`)); err == nil {
		t.Fatal("a web search call projected as a message")
	}
}
