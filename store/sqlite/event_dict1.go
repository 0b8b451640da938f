package sqlite

// eventDictionary1 is the zstd dictionary of event encoding "zd1" (see
// event_compress.go): the skeletons of Cairn's events as the store keeps
// them, a joins line and then a payload, with ids and digests taken out.
// A short event shares most of its bytes with these (keys, kinds, media
// types), so it compresses to its ids and values alone.
//
// Never change it: rows encoded with it decode with it. A better one is
// a new encoding ("zd2") beside it.
const eventDictionary1 = `{"providerKind":"anthropic.messages.block","providerKind":"anthropic.messages.text","providerKind":"anthropic.messages.thinking","providerKind":"anthropic.messages.redacted_thinking","providerKind":"anthropic.messages.tool_use","providerKind":"openai.responses.item","providerKind":"openai.chat.reasoning","providerKind":"openai.chat.tool_call","mediaType":"application/vnd.cairn.request-segment-delta+json","mediaType":"application/vnd.cairn.request-segments+json","mediaType":"application/vnd.cairn.request-segment-index+json","mediaType":"application/vnd.cairn.vfs.snapshot+json","mediaType":"application/vnd.cairn.skill-catalog+json","mediaType":"application/vnd.cairn.agent-menu+json","mediaType":"application/vnd.cairn.transcript+json","mediaType":"text/markdown; charset=utf-8","mediaType":"image/png","apiKind":"openai_responses","apiKind":"anthropic_messages"}

{"sessionId":"s1","config":{"model":{"providerId":"openai","apiKind":"chat_completions","model":"gpt-test"},"tools":["search"]}}

{"baseRevision":0,"entries":[{"entryId":"e1","key":"instructions.main","kind":"instructions","source":"api","content":{"digest":"sha256:","mediaType":"text/plain; charset=utf-8"},"tokenEstimate":{"tokens":3,"quality":"heuristic"},"preview":"be brief"}]}

{"baseRevision":1,"entries":[{"entryId":"e2","key":"note","kind":"message","role":"user","source":"api","content":{"digest":"sha256:","mediaType":"text/plain; charset=utf-8"},"tokenEstimate":{"tokens":4,"quality":"heuristic"},"preview":"remember acorn"},{"entryId":"e3","key":"instructions.style","kind":"instructions","source":"api","content":{"digest":"sha256:","mediaType":"text/plain; charset=utf-8"},"tokenEstimate":{"tokens":5,"quality":"heuristic"},"preview":"use bullet points"},{"entryId":"e4","kind":"message","role":"user","source":"api","content":{"digest":"sha256:","mediaType":"text/plain; charset=utf-8"},"tokenEstimate":{"tokens":2,"quality":"heuristic"},"preview":"scratch"}]}

{"baseRevision":2,"keys":["note"]}

{"baseRevision":3,"entryIds":["e4"]}

{"config":{"model":{"providerId":"openai","apiKind":"chat_completions","model":"gpt-test"},"tools":["search"],"maxTurns":8}}
["run:r1"]
{"runId":"r1","submissionId":"sub-1","inputFingerprint":"in1:","input":[{"content":{"digest":"sha256:","mediaType":"text/plain; charset=utf-8"},"tokenEstimate":{"tokens":9,"quality":"heuristic"},"preview":"Draft release notes for Acorn 2.0"}],"queued":false}
["run:r1","turn:r1/1"]
{"runId":"r1","turn":1}
["run:r1","turn:r1/1"]
{"baseRevision":4,"entries":[{"entryId":"e5","kind":"message","role":"user","source":"user","content":{"digest":"sha256:","mediaType":"text/plain; charset=utf-8"},"tokenEstimate":{"tokens":9,"quality":"heuristic"},"preview":"Draft release notes for Acorn 2.0","origin":"user:","runId":"r1"}]}
["run:r1","turn:r1/1"]
{"runId":"r1","turn":1,"contextRevision":5,"configRevision":2,"fingerprint":"fp2:"}
["run:r1","turn:r1/1"]
{"runId":"r1","turn":1}
["run:r2"]
{"runId":"r2","inputFingerprint":"in1:","input":[{"content":{"digest":"sha256:","mediaType":"text/plain; charset=utf-8"},"tokenEstimate":{"tokens":3,"quality":"heuristic"},"preview":"and a tweet"}],"queued":true}
["run:r1"]
{"runId":"r1","steeringId":"st-1","input":[{"content":{"digest":"sha256:","mediaType":"text/plain; charset=utf-8"},"tokenEstimate":{"tokens":6,"quality":"heuristic"},"preview":"mention the parser fix"}]}
["run:r1","turn:r1/1"]
{"runId":"r1","turn":1,"finish":"tool_calls","responseId":"resp-1","usage":{"inputTokens":120,"outputTokens":30,"cachedInputTokens":64},"toolCalls":[{"callId":"call-1","name":"search","arguments":{"digest":"sha256:","mediaType":"application/json"}},{"callId":"call-2","name":"shell","arguments":{"digest":"sha256:","mediaType":"application/json"}}],"cache":{"providerId":"openai","apiKind":"chat_completions","model":"gpt-test","requestBytes":2048,"segmentBytes":230,"segmentCount":4,"segments":{"digest":"sha256:","mediaType":"application/vnd.cairn.request-segments+json"}}}
["run:r1","turn:r1/1"]
{"baseRevision":5,"entries":[{"entryId":"e6","kind":"message","role":"assistant","source":"model","content":{"digest":"sha256:","mediaType":"text/plain; charset=utf-8","providerKind":"chat_completions.message"},"tokenEstimate":{"tokens":4,"quality":"heuristic"},"preview":"let me check","runId":"r1"},{"entryId":"e7","kind":"tool_call","source":"model","content":{"digest":"sha256:","mediaType":"application/json"},"tokenEstimate":{"tokens":5,"quality":"heuristic"},"callId":"call-1","toolName":"search","runId":"r1"},{"entryId":"e8","kind":"tool_call","source":"model","content":{"digest":"sha256:","mediaType":"application/json"},"tokenEstimate":{"tokens":5,"quality":"heuristic"},"callId":"call-2","toolName":"shell","runId":"r1"}]}
["run:r1","turn:r1/1"]
{"runId":"r1","turn":1,"callIds":["call-1","call-2"]}
["run:r1","turn:r1/1","call:call-1"]
{"runId":"r1","turn":1,"callId":"call-1","name":"search","arguments":{"digest":"sha256:","mediaType":"application/json"}}
["run:r1","turn:r1/1","call:call-2"]
{"runId":"r1","turn":1,"callId":"call-2","status":"unavailable","result":{"digest":"sha256:","mediaType":"application/json"}}
["run:r1","turn:r1/1","call:call-1"]
{"baseRevision":7,"entries":[{"entryId":"e10","kind":"tool_result","source":"tool","content":{"digest":"sha256:","mediaType":"application/json"},"tokenEstimate":{"tokens":7,"quality":"heuristic"},"preview":"{\"changes\":[\"parser fix\"]}","callId":"call-1","toolName":"search","runId":"r1"}]}
["run:r1","turn:r1/1"]
{"runId":"r1","turn":1}
["run:r1","turn:r1/1"]
{"runId":"r1","turn":1,"outcome":"tool_calls"}
["run:r1","turn:r1/2"]
{"runId":"r1","turn":2,"finish":"stop","responseId":"resp-r1-2","usage":{"inputTokens":10,"outputTokens":3}}
["run:r1"]
{"runId":"r1","output":{"digest":"sha256:","mediaType":"text/plain; charset=utf-8","providerKind":"chat_completions.message"}}
["run:r2"]
{"runId":"r2"}
["run:r2","turn:r2/1"]
{"runId":"r2","turn":1,"finish":"error","usage":{},"failure":{"kind":"provider_error","message":"the provider returned 500","ref":{"digest":"sha256:","mediaType":"application/json"}}}
["run:r2"]
{"runId":"r2","error":{"kind":"provider_error","message":"the provider returned 500","ref":{"digest":"sha256:","mediaType":"application/json"}}}
["run:r3"]
{"runId":"r3","reason":"user cancelled"}
["run:r3"]
{"runId":"r3"}

{"compactionId":"k1","trigger":"manual","contextRevision":12,"entryIds":["e5","e6","e7","e8","e9","e10","e11","e12","e13","e14"],"estimatedTokens":73}

{"compactionId":"k1","error":{"kind":"compaction_failed","message":"no compaction item"}}

{"baseRevision":12,"compactionId":"k2","trigger":"manual","removedEntryIds":["e5","e6","e7","e8","e9","e10","e11","e12","e13","e14"],"entries":[{"entryId":"e15","kind":"summary","source":"runtime","content":{"digest":"sha256:","mediaType":"text/plain; charset=utf-8"},"tokenEstimate":{"tokens":12,"quality":"heuristic"},"preview":"Acorn 2.0 notes drafted; parser fix mentioned"}]}

{"compactionId":"k2","usage":{"inputTokens":300,"outputTokens":20}}

{"config":{"model":{"providerId":"openai","apiKind":"chat_completions","model":"gpt-test"},"tools":["search"],"maxTurns":8,"transcription":{"providerId":"openai","model":"whisper-1"}}}
["run:r4"]
{"runId":"r4","inputFingerprint":"in1:","input":[{"content":{"digest":"sha256:","mediaType":"text/plain; charset=utf-8"},"tokenEstimate":{"tokens":5,"quality":"heuristic"},"preview":"summarize this memo"},{"content":{"digest":"sha256:","mediaType":"audio/mp4"},"tokenEstimate":{"tokens":0,"quality":""},"preview":"[audio memo.m4a]","kind":"audio","filename":"memo.m4a"}],"queued":false}
["run:r4"]
{"runId":"r4","transcription":{"providerId":"openai","model":"whisper-1"},"audio":[{"index":1,"audio":{"digest":"sha256:","mediaType":"audio/mp4"},"filename":"memo.m4a"}]}
["run:r4"]
{"runId":"r4","transcripts":[{"index":1,"content":{"digest":"sha256:","mediaType":"application/vnd.cairn.transcript+json","providerKind":"cairn.transcript"},"tokenEstimate":{"tokens":14,"quality":"heuristic"},"preview":"ship Acorn 2.1 on Friday"}]}

{"reason":"done"}

{"sessionId":"s_","config":{"model":{"providerId":"fake","apiKind":"chat_completions","model":"m"}}}
["run:run_"]
{"runId":"run_","inputFingerprint":"in1:","input":[{"content":{"digest":"sha256:","mediaType":"text/plain; charset=utf-8"},"tokenEstimate":{"tokens":16,"quality":"heuristic"},"preview":"Turn 1: a short message, as people write them."}],"queued":false}
["run:run_","turn:run_/1"]
{"runId":"run_","turn":1}
["run:run_","turn:run_/1"]
{"baseRevision":0,"entries":[{"entryId":"e1","kind":"message","role":"user","source":"user","content":{"digest":"sha256:","mediaType":"text/plain; charset=utf-8"},"tokenEstimate":{"tokens":16,"quality":"heuristic"},"preview":"Turn 1: a short message, as people write them.","origin":"user:","runId":"run_"}]}
["run:run_","turn:run_/1"]
{"runId":"run_","turn":1,"contextRevision":1,"configRevision":1,"fingerprint":"fp2:"}
["run:run_","turn:run_/1"]
{"runId":"run_","turn":1}
["run:run_","turn:run_/1"]
{"runId":"run_","turn":1,"finish":"stop","responseId":"chatcmpl-bench","usage":{"inputTokens":50,"outputTokens":12},"cache":{"providerId":"fake","apiKind":"chat_completions","model":"m","requestBytes":141,"segmentBytes":74,"segmentCount":1,"segments":{"digest":"sha256:","mediaType":"application/vnd.cairn.request-segments+json"}}}
["run:run_","turn:run_/1"]
{"baseRevision":1,"entries":[{"entryId":"e2","kind":"message","role":"assistant","source":"model","content":{"digest":"sha256:","mediaType":"application/json","providerKind":"openai.chat.message"},"tokenEstimate":{"tokens":22,"quality":"heuristic"},"preview":"Noted.","runId":"run_"}]}
["run:run_","turn:run_/1"]
{"runId":"run_","turn":1,"outcome":"answered"}
["run:run_"]
{"runId":"run_","output":{"digest":"sha256:","mediaType":"application/json","providerKind":"openai.chat.message"}}
`
