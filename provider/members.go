package provider

import "net"

// memberComma separates the members of a JSON array sent in parts.
var memberComma = []byte(",")

// AppendMembers appends to parts the members of a JSON array, comma
// separated: joined (members already joined by commas, such as a kept
// prefix's Members; nil for none), then each piece's bytes, each its own
// part, so a long request is sent without being copied into one buffer.
func AppendMembers(parts net.Buffers, joined []byte, pieces []*Piece) net.Buffers {
	if len(joined) > 0 {
		parts = append(parts, joined)
	}
	for i, pc := range pieces {
		if i > 0 || len(joined) > 0 {
			parts = append(parts, memberComma)
		}
		parts = append(parts, pc.Raw)
	}
	return parts
}
