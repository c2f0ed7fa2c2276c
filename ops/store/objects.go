package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/attachctl/attachctl/manifest/fault"
)

// Small objects, written once over a backend's primitive of them (Objects). A store that keeps
// its bookkeeping as objects (S3, the in-memory store) reads each small object whole with a
// version and writes it on a condition on that version. Where each kind is kept (the source
// notes, the reservations, the mark, an upload's use marker), what its body says and what a
// refused write means are here, once; the backend keeps only the calls (S3: GetObject, a
// conditional PutObject that finds its own write when its answer was lost, DeleteObject If-Match,
// a listing by prefix).

// Objects is a backend's small objects, named by their key from the store's top
// (".attachctl/reserved/<id>", "<id>/.used").
type Objects interface {
	// Get reads the object at key whole, with its version (S3: its ETag) and when it was last
	// written: ErrNoObject when there is none.
	Get(ctx context.Context, key string) (Object, error)
	// Put writes body at key create-only (version ""), or only over that version (AnyVersion:
	// over whatever is there): ErrObjectChanged when it is refused so (another wrote first, or the object went). A write
	// the backend took whose answer was lost is taken, as its own bytes are found there. It
	// returns the version written.
	Put(ctx context.Context, key, version string, body []byte) (string, error)
	// Delete removes the object at key; given a version, only while it is still that one
	// (ErrObjectChanged when it moved). One that is not there is no error.
	Delete(ctx context.Context, key, version string) error
	// List returns the keys of the objects under prefix.
	List(ctx context.Context, prefix string) ([]string, error)
}

// An error of Objects other than these carries its code where the backend knows it (a server
// that does not answer: store.unreachable); one that carries none (a *fault.Error with no code,
// or any other error) is given the caller's (objectErr).
var (
	ErrNoObject      = errors.New("no such object")
	ErrObjectChanged = errors.New("the object changed since it was read")
)

// AnyVersion is the version that puts over whatever is at a key, or nothing.
const AnyVersion = "*"

// Object is a small object as read whole.
type Object struct {
	Body     []byte
	Version  string
	Modified time.Time
	Meta     map[string]string // its metadata (LeaseObjects), nil where none was written
}

// The keys of the small objects.
func noteKey(hex string) string       { return InternalDir + "/source/" + hex }
func reservationKey(id string) string { return InternalDir + "/reserved/" + id }
func reservationDir() string          { return reservationKey("") }
func useKey(id string) string         { return id + "/" + UsedName }
func markKey() string                 { return InternalDir + "/" + MarkName }
func infoKey(id string) string        { return InternalDir + "/partial/" + id + "/info" }

// objectErr gives an error of Objects code when it carries none, and names what it was about
// when it does not say.
func objectErr(what string, err error, code fault.Code) error {
	e := new(fault.Error)
	switch {
	case err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.As(err, &e) && e.Code == "": // the backend's words, with no code of its own
		c := *e
		c.Code = code
		return &c
	case e.Code != "":
		return err
	}
	return fault.At(what, err, code)
}

// ReadInfo reads the info of the unfinished upload id, the JSON of a P kept as the small object
// .attachctl/partial/<id>/info of the store at where: upload.missing when there is none,
// upload.unreadable when it is not an info (no valid name).
func ReadInfo[P NotePartial](ctx context.Context, o Objects, id, where string) (P, error) {
	var p, none P
	obj, err := o.Get(ctx, infoKey(id))
	switch {
	case errors.Is(err, ErrNoObject):
		return none, fault.Errorf(fault.UploadMissing, "upload %s: no unfinished upload in store %s", id, where)
	case err != nil:
		return none, objectErr("upload "+id, err, fault.UploadUnreadable)
	}
	if json.Unmarshal(obj.Body, &p) != nil || p == none || ValidName(p.Of().Name) != nil {
		return none, fault.Errorf(fault.UploadUnreadable, "upload %s: %s/%s is not an attachctl partial", id, where, infoKey(id))
	}
	return p, nil
}

// WriteInfo writes p as the info of the unfinished upload id (ReadInfo), over version: create-only
// for an upload just begun (its id is new, so a write whose answer was lost finds itself), or over
// whatever is there (AnyVersion) to fix it.
func WriteInfo(ctx context.Context, o Objects, id string, p any, version string) error {
	b, err := json.Marshal(p)
	if err == nil {
		_, err = o.Put(ctx, infoKey(id), version, b)
	}
	return objectErr("upload "+id, err, fault.UploadUnreadable)
}

// ProbeConditions checks that o honours its conditions before anything depends on them: a
// probe object of a key of its own is written create-only (it must be taken), again (it must be
// refused: else newTaken), and over a version it does not have (refused: else matchTaken). Each
// write's body is its own, so a write refused that finds it is an earlier attempt whose answer
// was lost (Objects.Put). The probe is removed after.
func ProbeConditions(ctx context.Context, o Objects) (newTaken, matchTaken bool, err error) {
	key := InternalDir + "/probe-" + newNonce()
	defer o.Delete(context.WithoutCancel(ctx), key, "")
	taken := []*bool{nil, &newTaken, &matchTaken}
	for i, version := range []string{"", "", `"00000000000000000000000000000000"`} {
		_, err := o.Put(ctx, key, version, []byte(fmt.Sprintf("probe %d\n", i)))
		switch {
		case err == nil && i > 0:
			*taken[i] = true
		case err != nil && (i == 0 || !errors.Is(err, ErrObjectChanged)):
			return false, false, objectErr("conditional write check", err, fault.StoreUnreachable)
		}
	}
	return newTaken, matchTaken, nil
}

// ObjectReserver is the reservations' primitives (Reserver) over Objects: a reservation is the
// object .attachctl/reserved/<id>, created create-only; Lock takes the limits lock.
type ObjectReserver struct {
	O    Objects
	Loc  string // the store, for messages
	Lock func(ctx context.Context, wait time.Duration) (LimitsLock, error)
}

func (r ObjectReserver) LockLimits(ctx context.Context, wait time.Duration) (LimitsLock, error) {
	return r.Lock(ctx, wait)
}

// PutReservation writes the reservation create-only; its body names its holder, so a write
// whose answer was lost finds itself there (Objects.Put), and one found there otherwise is
// another's.
func (r ObjectReserver) PutReservation(ctx context.Context, key string, body []byte) error {
	_, err := r.O.Put(ctx, reservationKey(key), "", body)
	if errors.Is(err, ErrObjectChanged) {
		return fault.Errorf(fault.UploadInvalid, "store %s: reservation %s is there already", r.Loc, key)
	}
	return objectErr("reservation "+key, err, fault.StoreUnreachable)
}

// Reservations reads every reservation; one dropped between the listing and its read is none.
func (r ObjectReserver) Reservations(ctx context.Context) (map[string][]byte, error) {
	keys, err := r.O.List(ctx, reservationDir())
	if err != nil {
		return nil, objectErr("reservations", err, fault.StoreUnreachable)
	}
	out := map[string][]byte{}
	for _, k := range keys {
		o, err := r.O.Get(ctx, k)
		switch {
		case errors.Is(err, ErrNoObject):
		case err != nil:
			return nil, objectErr("reservations", err, fault.StoreUnreachable)
		default:
			out[strings.TrimPrefix(k, reservationDir())] = o.Body
		}
	}
	return out, nil
}

func (r ObjectReserver) DropReservation(ctx context.Context, key string) error {
	return objectErr("reservation "+key, r.O.Delete(ctx, reservationKey(key), ""), fault.StoreUnreachable)
}

// ObjectMark is a store's mark (Marker) kept as the object .attachctl/store, replaced only over
// the version read; Make makes the store.
type ObjectMark struct {
	O    Objects
	Loc  string // the store, for messages
	At   string // the mark, for messages
	Make func(ctx context.Context) error
}

func (m ObjectMark) MakeStore(ctx context.Context) error { return m.Make(ctx) }

// ReadMark reads the mark; none is a location not made a store yet (what it is, Judge decides).
func (m ObjectMark) ReadMark(ctx context.Context) ([]byte, string, error) {
	o, err := m.O.Get(ctx, markKey())
	if errors.Is(err, ErrNoObject) {
		return nil, "", nil
	}
	return o.Body, o.Version, objectErr("store mark", err, fault.StoreUnreachable)
}

// ReplaceMark writes the mark over the version read: one changed since is another's store init
// (or a first use's check), which this one must not undo.
func (m ObjectMark) ReplaceMark(ctx context.Context, body []byte, version string) error {
	_, err := m.O.Put(ctx, markKey(), version, body)
	if errors.Is(err, ErrObjectChanged) {
		return fault.Errorf(fault.UploadInvalid, "store %s: its mark changed while the limits were set; run store init again", m.Loc)
	}
	return objectErr("store mark", err, fault.StoreUnreachable)
}

// Stamp writes line into the mark read (body at version; version "": none, a store made here),
// over that version: a store whose conditional writes were checked on its first use says so, so
// that they are checked once. A write refused so is another process's mark meanwhile (its own
// check), which is as good. A mark whose limits line is damaged is left as it is, for its owner
// to mend: what needs the limits (an upload) fails naming it, and what does not goes on.
func (m ObjectMark) Stamp(ctx context.Context, body []byte, version, line string) error {
	l, err := ParseMark(m.At, body)
	if err != nil {
		return nil
	}
	if _, err := m.O.Put(ctx, markKey(), version, MarkWith([]byte(MarkLine+line), l)); !errors.Is(err, ErrObjectChanged) {
		return objectErr("store mark", err, fault.StoreUnreachable)
	}
	return nil
}

// The mark's second line says that its store's server was found to honour conditional writes
// (create-only, and over a version), checked once on the store's first use so that a server that
// ignores them is refused before anything depends on them; or that the user said to go on without
// the check (--s3-unsafe-no-conditional).
const (
	CondChecked   = "conditional writes checked "
	CondUnchecked = "conditional writes not checked (--s3-unsafe-no-conditional) "
)

// CheckConditions takes in the mark read (body at version; version "": none, a store made here):
// one that does not say its conditional writes were checked (a new store, or one marked by an
// earlier version) gets the check now (ProbeConditions), and the line that says so (Stamp). A
// server that ignores a condition is store.unreachable, unless unsafe (the user's word), when the
// line says the check was not made, and it is made again on a use without that word.
func (m ObjectMark) CheckConditions(ctx context.Context, body []byte, version string, unsafe bool) error {
	now := time.Now().UTC().Format(time.RFC3339Nano) + "\n"
	switch {
	case bytes.Contains(body, []byte(CondChecked)), unsafe && bytes.Contains(body, []byte(CondUnchecked)):
		return nil
	case unsafe:
		return m.Stamp(ctx, body, version, CondUnchecked+now)
	}
	newTaken, matchTaken, err := ProbeConditions(ctx, m.O)
	var ignored []string
	if newTaken {
		ignored = append(ignored, "If-None-Match: *")
	}
	if matchTaken {
		ignored = append(ignored, "If-Match")
	}
	if err == nil && len(ignored) > 0 {
		err = fault.Errorf(fault.StoreUnreachable, "store %s: the server ignores %s on PutObject (a write that must be refused was taken); "+
			"attachctl's create-only finish and its .used marker protocol depend on conditional writes, so the store is refused "+
			"(--s3-unsafe-no-conditional uses it anyway: then two uploads or a use racing a sweep can lose data)", m.Loc, strings.Join(ignored, " and "))
	}
	if err != nil {
		return err
	}
	return m.Stamp(ctx, body, version, CondChecked+now)
}

// UseMark is an upload's use marker kept as the object <id>/.used, as read: where there is no
// lock, every write of it is conditional on the one read (MarkUsedOn), and a sweep replaces it by
// a tombstone, conditionally too, before it removes anything.
type UseMark struct {
	Exists    bool
	Tombstone bool
	Foreign   bool      // not attachctl's: its time is when the object was last written
	At        time.Time // when last used (a tombstone: when the sweep wrote it); zero when not read
	Version   string
}

// A marker's body is "KIND TIME NONCE\n" with a time of fixed width, so a used marker and a
// tombstone differ in size and a listing tells them apart without reading them. The nonce makes
// every write a new version, and lets a write whose answer was lost find itself.
const useMarkTime = "2006-01-02T15:04:05.000000000Z"

// UseMarkSizes are the sizes of a used marker and of a tombstone.
const (
	UsedMarkSize      = len("used ") + len(useMarkTime) + 1 + 16 + 1
	TombstoneMarkSize = len("tombstone ") + len(useMarkTime) + 1 + 16 + 1
)

// ReadUseMark reads the use marker of the upload id.
func ReadUseMark(ctx context.Context, o Objects, id string) (UseMark, error) {
	obj, err := o.Get(ctx, useKey(id))
	if errors.Is(err, ErrNoObject) {
		return UseMark{}, nil
	} else if err != nil {
		return UseMark{}, objectErr("marker of "+id, err, fault.UploadUnreadable)
	}
	f := strings.Fields(string(obj.Body))
	var at time.Time
	if len(f) >= 2 {
		at, _ = time.Parse(time.RFC3339Nano, f[1])
	}
	if len(f) < 2 || (f[0] != "used" && f[0] != "tombstone") || at.IsZero() {
		// Any machine that resolves can write one: it is a use at the time it was written (as
		// the local store reads its marker's mtime), replaced by the next conditional write.
		return UseMark{Exists: true, Foreign: true, At: obj.Modified.UTC(), Version: obj.Version}, nil
	}
	return UseMark{Exists: true, Tombstone: f[0] == "tombstone", At: at, Version: obj.Version}, nil
}

// WriteUseMark replaces the marker m (as read) by a new one of kind ("used", "tombstone"),
// conditionally: over its version, or create-only where there was none. It returns the new
// version; a write that lost the race (another wrote first, or the marker went) returns raced.
func WriteUseMark(ctx context.Context, o Objects, id string, m UseMark, kind string, at time.Time, raced error) (string, error) {
	body := fmt.Sprintf("%s %s %s\n", kind, at.UTC().Format(useMarkTime), newNonce())
	v, err := o.Put(ctx, useKey(id), m.Version, []byte(body))
	if errors.Is(err, ErrObjectChanged) {
		return "", raced
	}
	return v, objectErr("marker of "+id, err, fault.UploadUnreadable)
}

// WriteUseOn is UseBackend.WriteUse of a marker kept as an object (m, as read): a write over a
// marker read proves the upload was there (a sweep removes nothing before its tombstone replaced
// the marker); one made where there was none is checked by check (the finished upload looked at
// once more), and undone, only while it is still the one written.
func WriteUseOn(ctx context.Context, o Objects, id string, m UseMark, at time.Time, check func() error) (func() error, func(), error) {
	v, err := WriteUseMark(ctx, o, id, m, "used", at, ErrUseRaced)
	if err != nil || m.Exists {
		return nil, nil, err
	}
	return check, func() { o.Delete(ctx, useKey(id), v) }, nil
}

// DropTombstone removes the tombstone of the upload id that a sweep left alone, read whole first
// (a listing tells it by its size, and a foreign object of that size is no tombstone, and stays),
// and only while it is the one read.
func DropTombstone(ctx context.Context, o Objects, id string) error {
	m, err := ReadUseMark(ctx, o, id)
	if err != nil || !m.Tombstone {
		return err
	}
	if err := o.Delete(ctx, useKey(id), m.Version); !errors.Is(err, ErrObjectChanged) {
		return objectErr("marker of "+id, err, fault.UploadUnreadable)
	}
	return nil
}

// newNonce is a random nonce of 16 hex digits.
func newNonce() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// MapObjects is Objects in memory: the in-memory store's, and the engines' tests'. Its zero value
// is ready.
type MapObjects struct {
	mu   sync.Mutex
	objs map[string]Object
	n    int // the last version given
}

func (m *MapObjects) Get(_ context.Context, key string) (Object, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key]
	if !ok {
		return Object{}, ErrNoObject
	}
	o.Body = append([]byte{}, o.Body...) // not nil: an empty object is there
	o.Meta = maps.Clone(o.Meta)
	return o, nil
}

func (m *MapObjects) Put(ctx context.Context, key, version string, body []byte) (string, error) {
	o, err := m.PutMeta(ctx, key, version, body, nil)
	if err != nil {
		return "", err
	}
	return o.Version, nil
}

// PutMeta makes MapObjects LeaseObjects: refused, it returns the object found.
func (m *MapObjects) PutMeta(_ context.Context, key, version string, body []byte, meta map[string]string) (Object, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.objs[key]; version != AnyVersion && (ok != (version != "") || ok && o.Version != version) {
		o.Body = slices.Clone(o.Body)
		return o, ErrObjectChanged
	}
	if m.objs == nil {
		m.objs = map[string]Object{}
	}
	m.n++
	o := Object{Body: slices.Clone(body), Version: strconv.Itoa(m.n), Modified: time.Now().UTC(), Meta: maps.Clone(meta)}
	m.objs[key] = o
	return o, nil
}

func (m *MapObjects) Delete(_ context.Context, key, version string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.objs[key]; ok && version != "" && o.Version != version {
		return ErrObjectChanged
	}
	delete(m.objs, key)
	return nil
}

func (m *MapObjects) List(_ context.Context, prefix string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(m.objs)) {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	return keys, nil
}
