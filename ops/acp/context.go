package acp

import (
	"fmt"
	"strings"
)

// sharedMin is how many by-path files must share a reason for it to be said once, as the head of
// their group ("406 files by path: …"), rather than on each file's line: a 400-file --each prompt
// would otherwise repeat the same hundred bytes 400 times.
const sharedMin = 3

// groupHead heads the lines of the n files that go by path for one reason.
func groupHead(n int, reason, layer string) string {
	s := fmt.Sprintf("\n%d files by path: %s", n, reason)
	if layer != "" {
		s += " (" + layer + ")"
	}
	return s + ":"
}

// groupLine lists one file of a group: its path, type and size (the reason is the group's).
func groupLine(r *ref) string {
	line := fmt.Sprintf("\n- %s (%s, %d bytes)", escapePath(r.link), r.mime, r.size)
	if r.copy == copyChanged {
		line += "; " + changedNote(r)
	}
	return line
}

// contextEntry is one line of the context block: a file, and the head of its group when it is
// the first listed of one.
type contextEntry struct {
	r    *ref
	line string
	head string // a group's head, before its first file's line
}

// contextEntries are the context block's lines in order: every file of the prompt in prompt
// order (inline and embedded ones marked so, by-path ones with their reason), except those whose
// reason many share, which follow in one group per reason.
func contextEntries(files []*ref) []contextEntry {
	key := func(r *ref) string {
		if r.mode != modePath || r.reason == "" || r.folder != nil {
			return ""
		}
		return r.layer + "\x00" + r.reason
	}
	count := map[string]int{}
	var order []string
	for _, r := range files {
		if k := key(r); k != "" {
			if count[k] == 0 {
				order = append(order, k)
			}
			count[k]++
		}
	}
	var out []contextEntry
	groups := map[string][]*ref{}
	for _, r := range files {
		if k := key(r); k != "" && count[k] >= sharedMin {
			groups[k] = append(groups[k], r)
			continue
		}
		out = append(out, contextEntry{r: r, line: contextLine(r, r.reason, r.layer)})
	}
	for _, k := range order {
		for i, r := range groups[k] {
			e := contextEntry{r: r, line: groupLine(r)}
			if i == 0 {
				e.head = groupHead(len(groups[k]), r.reason, r.layer)
			}
			out = append(out, e)
		}
	}
	return out
}

// contextBlock is the text block with _meta.acpmux.context true that lists every file of the
// prompt (contextEntries), as many as fit in room bytes, then "and N more"; nil for a prompt that
// names none. plan has left room for its header and the last line, and for every file's line at
// its longest, which a group's lines never pass.
func contextBlock(refs []*ref, opts Options, room int64) ([]byte, int) {
	var files []*ref
	images := false
	for _, r := range refs {
		if r != nil && !r.child() {
			files = append(files, r)
			images = images || r.image && r.mode == modePath
		}
	}
	if len(files) == 0 {
		return nil, 0
	}
	text := contextHead(images && !opts.Caps.Image)
	n := int64(len(contextJSON(text)))
	esc := func(s string) int64 { b, _ := marshal(s); return int64(len(b)) - 2 }
	entries := contextEntries(files)
	var sb strings.Builder
	sb.WriteString(text)
	listed := 0
	for i, e := range entries {
		need := esc(e.head + e.line)
		if i < len(entries)-1 {
			need += esc(moreLine(len(entries) - i - 1))
		}
		if n+need > room {
			sb.WriteString(moreLine(len(entries) - i))
			break
		}
		sb.WriteString(e.head + e.line)
		n += esc(e.head + e.line)
		listed++
		if e.r.folder != nil { // its tree, in the room the lines of the files after it leave
			rest := int64(0)
			for _, o := range entries[i+1:] {
				rest += esc(o.head + o.line)
			}
			tree, k := treeLines(e.r, room-n-rest, esc)
			sb.WriteString(tree)
			n += k
		}
	}
	return contextJSON(sb.String()), listed
}
