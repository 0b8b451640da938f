package anthropic

import (
	"fmt"
	"strings"
)

// Scripted responses, written for these tests in the shape of the Messages
// API (not recorded; the recorded ones stay in the shared payloads and are
// read in place). Signatures and encrypted fields are made-up base64.

func scriptedThinkingToolUse(n int, tools ...string) []byte {
	var blocks []string
	blocks = append(blocks, fmt.Sprintf(`{"type":"thinking","thinking":"Turn %d: I should call %s.","signature":"RXNjcmlwdGVkLXNpZ25hdHVyZS0%02d="}`, n, strings.Join(tools, " and "), n))
	blocks = append(blocks, fmt.Sprintf(`{"type":"text","text":"Let me check (turn %d)."}`, n))
	for i, tool := range tools {
		blocks = append(blocks, fmt.Sprintf(`{"type":"tool_use","id":"toolu_%02d_%d","name":%q,"input":{"query":"q%d-%d"}}`, n, i, tool, n, i))
	}
	return scriptedMessage(n, "tool_use", blocks...)
}

func scriptedAnswer(n int) []byte {
	return scriptedMessage(n, "end_turn",
		fmt.Sprintf(`{"type":"thinking","thinking":"Turn %d: enough to answer.","signature":"QW5zd2VyLXNpZ25hdHVyZS0%02d="}`, n, n),
		fmt.Sprintf(`{"type":"text","text":"Answer %d: the game starts at 7 pm; "}`, n),
		fmt.Sprintf(`{"type":"text","text":"bring a coat","citations":[{"type":"char_location","cited_text":"Low of 41F tonight.","document_index":0,"document_title":"Forecast %d","start_char_index":0,"end_char_index":19}]}`, n),
		`{"type":"text","text":"."}`)
}

func scriptedWebSearch(n int) []byte {
	return scriptedMessage(n, "end_turn",
		fmt.Sprintf(`{"type":"server_tool_use","id":"srvtoolu_%02d","name":"web_search","input":{"query":"tigers schedule %d"}}`, n, n),
		fmt.Sprintf(`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_%02d","content":[{"type":"web_search_result","title":"Schedule","url":"https://example.com/tigers","encrypted_content":"RW5jcnlwdGVkLXJlc3VsdC0%02d","page_age":"1 day ago"}]}`, n, n),
		`{"type":"text","text":"Per the schedule, ","citations":null}`,
		fmt.Sprintf(`{"type":"text","text":"first pitch is 7:10 pm","citations":[{"type":"web_search_result_location","cited_text":"First pitch 7:10 pm","url":"https://example.com/tigers","title":"Schedule","encrypted_index":"RW5jcnlwdGVkLWluZGV4LTA%02d"}]}`, n))
}

func scriptedMessage(n int, stop string, blocks ...string) []byte {
	return []byte(fmt.Sprintf(`{"id":"msg_scripted_%02d","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[%s],"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":%d}}`,
		n, strings.Join(blocks, ","), stop, 100+n, 10+n))
}
