package stage

// ChunkOf is the chunk an Uploader settled on, for the tests of package stage_test.
func ChunkOf(u *Uploader) int64 { return u.opts.Chunk }

// HintLine is TerminalHint's line for a given system, for the tests of package stage_test.
var HintLine = hintLine
