package topology

// MaxSpelledNodes is the largest number of YAML nodes a file may spell out,
// aliases not expanded (MaxNodes bounds them expanded). The YAML decoder
// takes about 250 bytes a node, so a 16 MiB file of tiny nodes ("- a" on
// each line, or "[a,a,a,…]") would cost it 1 to 2 GB; it is counted on the
// raw bytes before anything is decoded, so such a file is refused having
// cost no more than its reading. A million nodes is about 250 MB decoded,
// room for the 100,000-service chain MaxServices allows (about 900,000).
const MaxSpelledNodes = 1_000_000

// scanNodes counts, on the raw bytes, at least as many nodes as the YAML
// decoder would make of data, and refuses data past MaxSpelledNodes at the
// line and column where the count crosses it. It counts each plain word
// and quoted scalar, each '[' and '{', each block sequence entry, each
// block key whose value starts on a later line (its value is a collection
// or null), each flow key without a value (null), and the root; a comment
// counts nothing. A word of several parts ("a b") counts for each, so the
// count errs high, never low, except for block scalars (| and >), which a
// topology has no use for and whose lines it counts as words.
func (p *parser) scanNodes(data []byte) error {
	if _, at, over := spelledNodes(data, MaxSpelledNodes); over {
		return p.errAt(at, "the file spells out more than %d YAML nodes; a topology within the limits needs fewer", MaxSpelledNodes)
	}
	return nil
}

// spelledNodes returns scanNodes's count of data's nodes, stopping as soon
// as it passes limit with over set and at the position where it did.
func spelledNodes(data []byte, limit int) (n int, at Pos, over bool) {
	n = 1 // the root
	line, col := 1, 0
	inWord := false
	var flow []byte // the open '[' and '{', innermost last
	// In a flow mapping, what the current entry has shown: a key, the value
	// indicator, a value. An entry without a value has a null one.
	entryKey, entryColon, entryValue := false, false, false
	content := func(inMap bool) {
		if inMap {
			if entryColon {
				entryValue = true
			} else {
				entryKey = true
			}
		}
	}
	for i := 0; i < len(data); i++ {
		c := data[i]
		col++
		next := byte('\n')
		if i+1 < len(data) {
			next = data[i+1]
		}
		inMap := len(flow) > 0 && flow[len(flow)-1] == '{'
		switch {
		case c == '\n':
			line, col, inWord = line+1, 0, false
		case c == ' ' || c == '\t' || c == '\r':
			inWord = false
		case c == '#' && !inWord:
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			// A quoted scalar: one node, whatever it holds, across lines.
			if !inWord {
				n++
				content(inMap)
			}
			for i+1 < len(data) {
				i++
				col++
				d := data[i]
				if d == '\n' {
					line, col = line+1, 0
				}
				if c == '"' && d == '\\' && i+1 < len(data) {
					i++
					col++
					continue
				}
				if d == c {
					if c == '\'' && i+1 < len(data) && data[i+1] == '\'' {
						i++
						col++
						continue
					}
					break
				}
			}
			inWord = false
		case c == '[' || c == '{':
			n++
			flow = append(flow, c)
			inWord, entryKey, entryColon, entryValue = false, false, false, false
		case c == ']' || c == '}' || c == ',':
			if inMap && (entryKey || entryColon) && !entryValue {
				n++ // a flow entry without a value: its value is null
			}
			inWord, entryKey, entryColon, entryValue = false, false, false, false
			if c != ',' && len(flow) > 0 {
				flow = flow[:len(flow)-1]
				// The collection just closed was an entry's value (or key)
				// in the mapping it sits in.
				entryKey, entryColon, entryValue = true, true, true
			}
		case c == ':' && (next == ' ' || next == '\t' || next == '\n' || next == '\r' || next == ',' || next == ']' || next == '}' || next == '#'):
			inWord = false
			if len(flow) > 0 {
				entryColon = true
				break
			}
			if restEmpty(data[i+1:]) {
				n++ // a block value on later lines (a collection) or none (null)
			}
		case c == '-' && !inWord && (next == ' ' || next == '\n' || next == '\r' || next == '\t'):
			n++ // a block sequence entry (or the sequence it opens)
			if restEmpty(data[i+1:]) {
				n++ // its value on later lines, or null
			}
		default:
			if !inWord {
				n++
				inWord = true
				content(inMap)
			}
		}
		if n > limit {
			return n, Pos{line, max(col, 1)}, true
		}
	}
	return n, Pos{}, false
}

// restEmpty reports whether the rest of the line holds nothing but spaces
// and a comment.
func restEmpty(rest []byte) bool {
	for i, c := range rest {
		switch c {
		case ' ', '\t', '\r':
		case '\n':
			return true
		case '#':
			return i > 0 // "#" right after ':' would be part of a word, but ':' needs a space first anyway
		default:
			return false
		}
	}
	return true
}
