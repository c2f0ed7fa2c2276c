package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// The source-note rules, written once: how runs of the same source (a file, a folder; from one
// path or copies at two, in two processes or on two machines, holding no lock in common) agree on
// one upload, over a backend's small objects (Objects) and its note primitives (NoteBackend). A
// source's note, the small object .attachctl/source/<SourceKey>, holds the id of the source's
// upload. The run that begins an upload writes its info
// first, then the note, create-only (or over a note naming an upload that is no more, on the
// version read): so a note never names an upload that cannot be found, and of two runs that
// start at once one wins the note and the other takes the winner's upload up instead of making a
// second copy. The note stays once the upload is finished, so that the same bytes uploaded again
// are named again; it goes with the upload only while it still names it (Drop). What is the
// backend's: the conditional writes that keep the notes, where infos are kept, and how an
// unfinished upload is written and resumed.

// NoteBackend is what a backend gives so that the source-note rules run over it (Notes), beside
// its small objects (Notes.O, where the notes and the infos of its unfinished uploads are kept,
// the JSON of a P, a pointer; nil: none): what an unfinished upload holds besides its info.
type NoteBackend[P NotePartial] interface {
	// DropPartial removes the unfinished upload id, whose info is p, as an abort does.
	DropPartial(ctx context.Context, id string, p P)
	// HeadFinished reads the finished upload id named name: upload.missing while it is not there.
	HeadFinished(ctx context.Context, id, name string) (*Info, error)
	// TidyFinished removes what is left of p, this run's unfinished form of the upload id, once
	// another run finished it: its info, and whatever unfinished write the backend holds of it.
	TidyFinished(ctx context.Context, id string, p P)
}

// NotePartial is a backend's info of an unfinished upload, as the rules read it.
type NotePartial interface {
	comparable
	// Of is what the upload was begun for; asked of a non-nil info only.
	Of() PartialOf
}

// PartialOf is what an unfinished upload was begun for (Resumes), or what a run uploads.
type PartialOf struct {
	Name   string
	Path   string // the source's path, where the backend keeps it
	Blake3 string // "": not known then
	Folder bool   // a folder upload's
	// Streamed: a file's upload begun by a stream (StreamUpload), which a run of the same source
	// takes up; not a step-by-step upload's, which no note names.
	Streamed bool
	Batch    bool // a batch's staging area, no upload of its own
}

// ErrNoteTaken is Start's answer when another run wrote the source's note first.
var ErrNoteTaken = errors.New("the source note was written by another run")

// Notes runs the source-note rules over B, admitting new uploads against Quota. A note is the
// small object .attachctl/source/<SourceKey> of O, written create-only or over the version read;
// an unfinished upload's info is .attachctl/partial/<id>/info (ReadInfo), written create-only.
type Notes[P NotePartial] struct {
	B     NoteBackend[P]
	O     Objects
	Quota *Quota
}

// sourceNote is a note's body.
type sourceNote struct {
	ID string `json:"id"`
}

// Key is the note of a source uploaded under name, of size bytes and BLAKE3 sum, whatever its
// path (SourceKey): a copy of the same file elsewhere finds the same upload. A folder's name ends
// in "/", so that a file and a folder of one name and BLAKE3 have notes of their own.
func (n Notes[P]) Key(name string, size int64, sum string) string {
	return noteKey(SourceKey(name, size, sum))
}

// Read reads the note at key: the upload it names ("" when it names none or cannot be read), and
// its version ("" when there is none), for a conditional write over a dead one.
func (n Notes[P]) Read(ctx context.Context, key string) (id, version string) {
	o, err := n.O.Get(ctx, key)
	var sn sourceNote
	switch {
	case err != nil:
		return "", ""
	case json.Unmarshal(o.Body, &sn) != nil || ValidID(sn.ID) != nil:
		return "", o.Version
	}
	return sn.ID, o.Version
}

// FindStream is what a stream of st.Src takes up, under its note: the finished upload the note
// names (p nil), or the unfinished one to resume (its info; held is asked what it holds of it:
// upload.missing when its write went away), or a new one begun by begin.
func (n Notes[P]) FindStream(ctx context.Context, st StreamStart, begin func(id string) (P, error), held func(id string, p P) error) (string, P, error) {
	src := st.Src
	take := func(id string, p P, wait bool) (string, P) {
		return n.resumable(ctx, id, p, src.Name, src.Blake3, wait, held)
	}
	return n.find(ctx, n.Key(src.Name, src.Size, src.Blake3), src.Name, src.Size, st.Avoid, st.Try, take, begin)
}

// FindTree is what a run of the folder st takes up, under its note (key, Key of the folder): the
// finished upload the note names (p nil), or the unfinished one to resume, or a new one begun by
// begin. The note is keyed on the folder's name, size and BLAKE3, not its path: the same bytes
// from any folder take the upload up; the info keeps the rest (Resumes, by the bytes: runs
// hold no lock).
func (n Notes[P]) FindTree(ctx context.Context, key string, st TreeStart, begin func(id string) (P, error)) (string, P, error) {
	var none P
	run := st.Of()
	take := func(id string, p P, _ bool) (string, P) {
		if p != none && !Resumes(p.Of(), run, true) {
			return "", none
		}
		return id, p
	}
	return n.find(ctx, key, st.Src.Name, st.Size, st.Avoid, 0, take, begin)
}

// find is how a run of a source (a file, a folder) finds what it takes up, under the source's
// note: the upload the note names as take keeps it (told its info, nil when it has none, and
// whether another run is known to be at this source, as tries or a lost note say): the
// unfinished upload to resume (its info), or a finished one to name again (no info; never
// avoid); else a new upload, begun by Start over the note read. A note another run wrote first
// is read again.
func (n Notes[P]) find(ctx context.Context, key, name string, size int64, avoid string, tries int,
	take func(id string, p P, wait bool) (string, P), begin func(id string) (P, error)) (string, P, error) {
	var none P
	for try := 0; ; try++ {
		id, version := n.Read(ctx, key)
		if id != "" {
			// The info after the note: it goes only once the upload is finished, so an upload
			// without it that another run is finishing now is found finished.
			p, _ := ReadInfo[P](ctx, n.O, id, "") // none: finished, gone, or unreadable
			if id, p = take(id, p, try > 0 || tries > 0); p != none || id != "" && id != avoid {
				return id, p, nil
			}
		}
		// The note says which upload this source is: two runs that start at once both write it
		// create-only (or over the dead one they read, on its version), so one wins and the other
		// resumes the winner's upload instead of making a second copy.
		id, p, err := n.Start(ctx, key, version, name, size, begin)
		if err != ErrNoteTaken || try >= 3 {
			return id, p, err
		}
	}
}

// Start is how a new upload (a file's by a stream, a folder's, a step-by-step one) begins:
// admitted against the store's limits before anything is sent, then begun (begin makes its info,
// and whatever goes before it), its info written, then the source's note when it has one (key
// ""; none): create-only, or over the note of an upload that is no more (version). ErrNoteTaken:
// another run wrote the note first, and what was begun here is dropped.
func (n Notes[P]) Start(ctx context.Context, key, version, name string, size int64, begin func(id string) (P, error)) (string, P, error) {
	var none P
	id, release, err := n.Quota.AdmitNew(ctx, name, size)
	if err != nil {
		return "", none, err
	}
	p, err := begin(id)
	if err == nil {
		err = WriteInfo(ctx, n.O, id, p, "")
	}
	if err == nil && key != "" {
		// The note names the upload just begun, so a write whose answer was lost finds
		// itself there (Objects.Put).
		b, _ := json.Marshal(sourceNote{ID: id})
		if _, err = n.O.Put(ctx, key, version, b); errors.Is(err, ErrObjectChanged) {
			err = ErrNoteTaken
		} else {
			err = objectErr("source note "+key, err, fault.UploadUnreadable)
		}
		if err != nil {
			n.B.DropPartial(context.WithoutCancel(ctx), id, p)
		}
	}
	if err != nil {
		release()
		return "", none, err
	}
	return id, p, nil
}

// Lost reports whether the note at key names another upload than id now, before id is
// published: a server may let two create-only writes of the note that race both succeed
// (versitygw's posix backend checks, then writes), and the note as it is now says which upload
// is the source's. The loser (unless it lost tries times already) drops its own, to take the
// winner's and send what it lacks.
func (n Notes[P]) Lost(ctx context.Context, key, id string, p P, tries int) bool {
	cur, _ := n.Read(ctx, key)
	if cur == "" || cur == id || tries >= 3 {
		return false
	}
	n.B.DropPartial(context.WithoutCancel(ctx), id, p)
	n.Quota.Done(ctx, id)
	return true
}

// Publish makes the unfinished upload id (p its info) finished by write, in the order the notes
// rely on: unless the note at key names another upload now (Lost: lost is the answer), write
// publishes it create-only; from then on the upload is counted finished, so its reservation
// goes, and then its info (a kill between leaves an info that names a finished upload, which
// the sweep removes). The note stays, so that the same bytes uploaded again are named again.
func (n Notes[P]) Publish(ctx context.Context, key, id string, p P, tries int, lost error, write func(context.Context) error) error {
	if n.Lost(ctx, key, id, p, tries) {
		return lost
	}
	if err := write(ctx); err != nil {
		return err
	}
	n.Quota.Done(ctx, id)
	n.O.Delete(ctx, infoKey(id), "")
	return nil
}

// Drop removes the source note whose SourceKey is hex when it names the upload id, on the version
// read, so that a note another run wrote since for another upload stays; never a note naming
// another id. It is tidying, not a removal anyone relies on: a note left (a server that refuses
// the condition, a sweep killed first) names an upload that is no more, which the next upload of
// that source finds and writes over.
func (n Notes[P]) Drop(ctx context.Context, hex, id string) {
	if h, err := CheckHex(hex); err != nil || h == "" || h != hex {
		return
	}
	key := noteKey(hex)
	if cur, version := n.Read(ctx, key); cur == id && version != "" {
		n.O.Delete(ctx, key, version)
	}
}

// FinishedByOther is the finished upload id when another run finished it with these bytes (want)
// under name; abs names the source in the error. p, this run's unfinished form of it, is tidied
// then. When wait is set, the other run's completion may still be under way (versitygw's posix
// backend takes the multipart upload away before the object is there): the finished upload is
// waited for a little.
func (n Notes[P]) FinishedByOther(ctx context.Context, abs, id, name, want string, p P, wait bool) (*Info, error) {
	info, err := n.B.HeadFinished(ctx, id, name)
	for pause := 50 * time.Millisecond; wait && fault.CodeOf(err) == fault.UploadMissing && pause < 5*time.Second; pause *= 2 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
		info, err = n.B.HeadFinished(ctx, id, name)
	}
	if err != nil {
		return nil, err
	}
	if info.Blake3 != want {
		return nil, fault.Errorf(fault.UploadHashMismatch, "%s: upload %s was finished by another run with BLAKE3 %s", abs, id, info.Blake3)
	}
	n.B.TidyFinished(ctx, id, p)
	return &Info{ID: id, Name: name, Size: info.Size, Blake3: want}, nil
}

// resumable is what a stream of a source takes up of the upload id its note names (p its info,
// nil when it has none): that upload, finished (p nil), or the unfinished one to resume, whose
// write held reads, or nothing. wait: another run is at work on this source.
func (n Notes[P]) resumable(ctx context.Context, id string, p P, name, want string, wait bool, held func(id string, p P) error) (string, P) {
	var none P
	if p == none {
		// Finished, or gone: StreamUpload reads it back before it names it again, and avoids it
		// when it is not these bytes.
		return id, none
	}
	if !Resumes(p.Of(), PartialOf{Name: name, Blake3: want, Streamed: true}, true) {
		return "", none
	}
	if err := held(id, p); err != nil {
		// Its write is gone: finished (then that upload is this source), or dropped (by a sweep
		// killed before it removed the info, by a bucket's lifecycle rule), when the finished
		// upload never comes. It is waited for only when another run is known to be at work on
		// this source (wait), whose completion may be under way: else this upload goes on at
		// once, and a completion under way unseen costs a second copy of the same bytes.
		if fault.CodeOf(err) == fault.UploadMissing {
			if _, err := n.FinishedByOther(ctx, "", id, name, want, p, wait); err == nil {
				return id, none
			}
		}
		return "", none
	}
	return id, p
}

// NoteWrite is a backend's write of the unfinished upload a stream found or began under its note
// (Notes.StartStream), below the rules.
type NoteWrite interface {
	// Held is how many bytes the backend holds of an earlier run, which it checks against the
	// source as it writes (S3: each part's ETag against the MD5 of the source's bytes).
	Held() int64
	// Restart forgets them: the write starts from the first byte.
	Restart()
	// Send writes the source f from offset from to its end, each byte read to pass
	// (StreamWrite.Write): ErrWriteGone when the upload's write went away under it.
	Send(ctx context.Context, f SourceFile, from int64, pass StreamPass) error
	// Complete publishes the upload create-only (Notes.Publish drops its info after): false when
	// another run of the same source published it first.
	Complete(ctx context.Context) (bool, error)
}

// ErrWriteGone is NoteWrite.Send's answer when the upload's write went away under it: another
// run of the same source finished it, or a sweep dropped it.
var ErrWriteGone = errors.New("the upload's write is gone")

// StartStream is StreamBackend.StartStream over the notes (FindStream): the finished upload the
// source's note names, or the unfinished one to resume, or a new one begun by begin, written
// through what open makes of it (resumed: what it holds is to be read; else it is new).
func (n Notes[P]) StartStream(ctx context.Context, st StreamStart, begin func(id string) (P, error), open func(id string, p P, resumed bool) (NoteWrite, error)) (StreamFound, StreamWrite, error) {
	var w NoteWrite
	var opened string
	id, p, err := n.FindStream(ctx, st, begin, func(id string, p P) (err error) {
		w, err = open(id, p, true)
		opened = id
		return err
	})
	var none P
	switch {
	case err != nil:
		return StreamFound{}, nil, err
	case p == none: // finished by an earlier run
		return StreamFound{ID: id}, nil, nil
	case opened != id:
		if w, err = open(id, p, false); err != nil {
			return StreamFound{}, nil, err
		}
	}
	return StreamFound{}, &noteStream[P]{n: n, st: st, id: id, p: p, w: w}, nil
}

// noteStream is the StreamWrite of an upload under its source's note.
type noteStream[P NotePartial] struct {
	n  Notes[P]
	st StreamStart
	id string
	p  P
	w  NoteWrite
}

func (s *noteStream[P]) ID() string { return s.id }

func (s *noteStream[P]) Stored() (StreamStored, error) { return StreamStored{Held: s.w.Held()}, nil }

func (s *noteStream[P]) Restart() error { s.w.Restart(); return nil }

func (s *noteStream[P]) Write(ctx context.Context, f SourceFile, from int64, pass StreamPass) (*Info, error) {
	err := s.w.Send(ctx, f, from, pass)
	if err == ErrWriteGone {
		// Another run of the same source finished (or a sweep dropped) the upload under us:
		// when the finished upload is these bytes, it is ours too.
		src := s.st.Src
		info, err := s.n.FinishedByOther(ctx, src.Path, s.id, src.Name, src.Blake3, s.p, true)
		if err == nil {
			s.n.Quota.Done(ctx, s.id)
		}
		return info, err
	}
	return nil, err
}

// Refuse drops the upload, and the note while it names it: what was sent is not what the record
// names, and another run of the same source may have taken the note over meanwhile.
func (s *noteStream[P]) Refuse(ctx context.Context, _ string) {
	src := s.st.Src
	s.n.B.DropPartial(ctx, s.id, s.p)
	s.n.Drop(ctx, SourceKey(src.Name, src.Size, src.Blake3), s.id)
}

// Publish completes the upload under its note (Notes.Publish); one another run of the same source
// published first must be these bytes.
func (s *noteStream[P]) Publish(ctx context.Context, _ string) (*Info, error) {
	src := s.st.Src
	err := s.n.Publish(ctx, s.n.Key(src.Name, src.Size, src.Blake3), s.id, s.p, s.st.Try, ErrStreamLost, func(ctx context.Context) error {
		taken, err := s.w.Complete(ctx)
		if err == nil && !taken {
			_, err = s.n.FinishedByOther(ctx, src.Path, s.id, src.Name, src.Blake3, s.p, true)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &Info{ID: s.id, Name: src.Name, Size: src.Size, Blake3: src.Blake3}, nil
}

func (s *noteStream[P]) Close(error) {}
