package store

// Resumes reports whether a run uploading run (a folder's, or a file's by a stream) takes up the
// unfinished upload p, written once for every backend: an upload begun for the same kind of
// source (a folder's for a folder; a file's begun by a stream for a file, never a step-by-step
// upload's, which no run of a source finds) under the same name, and for the same source. What
// the same source is depends on how the backend's runs share an upload. Where they share it only
// when they send the same bytes (sameBytes: no lock keeps another run out while one writes), it
// is the same BLAKE3, from any path: a copy of the source elsewhere takes it up too. Elsewhere (a
// lock keeps one run at a time) it is the same path, whose bytes may have changed since: a file's
// data is compared with the source's prefix as it is read back and written again where they
// differ, and a folder's files are kept only where each is equal to the source (dropStale).
func Resumes(p, run PartialOf, sameBytes bool) bool {
	if p.Folder != run.Folder || !run.Folder && !p.Streamed || p.Name != run.Name {
		return false
	}
	if sameBytes {
		return p.Blake3 == run.Blake3
	}
	return p.Path == run.Path
}

// Of is what a run of the folder st uploads, for Resumes.
func (st TreeStart) Of() PartialOf {
	return PartialOf{Name: st.Src.Name, Path: st.Src.Path, Blake3: st.Blake3, Folder: true}
}

// ChunkState is the unfinished upload p, declared size bytes (-1: open) and holding offset, as a
// step-by-step upload takes it up (ChunkBackend.OpenChunks). Its Kind is what began it, told the
// same way on every backend: a folder upload's, a batch's staging area, a stream's (the upload
// stage's, which knows its source and resumes it), else the step-by-step upload's own ("").
func (p PartialOf) ChunkState(size, offset int64) ChunkState {
	st := ChunkState{Name: p.Name, Size: size, Offset: offset}
	switch {
	case p.Folder:
		st.Kind = KindFolder
	case p.Batch:
		st.Kind = KindBatch
	case p.Streamed:
		st.Kind = KindFile
	}
	return st
}
