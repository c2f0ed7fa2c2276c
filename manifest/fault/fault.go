// Package fault is the error codes of docs/errors.md and the error value that carries one. It
// imports nothing of attachctl's: sniff, shrink, the store and the stages return a *Error, the
// manifest's record carries it as its "error" object, and callers test for a code with errors.Is:
//
//	if errors.Is(err, fault.UploadMissing) { ... }
package fault

import (
	"errors"
	"fmt"
)

// Code is one of the error codes of docs/errors.md. Every error that library code returns to a
// stage carries one, so that the record's "error" object and the message on standard error agree.
type Code string

// The error codes. A new code is added here and in docs/errors.md.
const (
	FileMissing        Code = "file.missing"
	FileUnreadable     Code = "file.unreadable"
	FileNotRegular     Code = "file.notRegular"
	FileChanged        Code = "file.changed"
	FileBadName        Code = "file.badName"
	ManifestInvalid    Code = "manifest.invalid"
	UploadInvalid      Code = "upload.invalid"
	UploadMissing      Code = "upload.missing"
	UploadUnreadable   Code = "upload.unreadable"
	UploadOffset       Code = "upload.offset"
	UploadPastSize     Code = "upload.pastSize"
	UploadSizeMismatch Code = "upload.sizeMismatch"
	UploadHashMismatch Code = "upload.hashMismatch"
	UploadSourceChange Code = "upload.sourceChanged"
	UploadDiskFull     Code = "upload.diskFull"
	UploadTooMany      Code = "upload.tooMany"
	UploadInterrupted  Code = "upload.interrupted"
	UploadTooLarge     Code = "upload.tooLarge" // over the store's largest file (its max-file)
	VerifyMismatch     Code = "verify.mismatch"
	StoreLocked        Code = "store.locked"
	StoreNotStore      Code = "store.notStore"
	StoreFull          Code = "store.full" // the store's max-bytes or max-files would be passed
	StoreUnreachable   Code = "store.unreachable"
)

// Error is the "error" object of a record: the stage that failed, the code, and a message that names
// the path or id and what went wrong. It is also the error value library code returns.
type Error struct {
	Stage   string `json:"stage"`
	Code    Code   `json:"code"`
	Message string `json:"message"`
	err     error  // the cause, for errors.Is/As; not serialised
}

// Error renders as "message (code)", the form written on standard error.
func (e *Error) Error() string { return e.Message + " (" + string(e.Code) + ")" }

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.err }

// Errorf makes an *Error with code and a formatted message. A %w verb keeps its cause for errors.Is.
func Errorf(code Code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), err: errors.Unwrap(err)}
}

// AsError returns err as an *Error. An error that carries no code becomes one with code def.
func AsError(err error, def Code) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: def, Message: err.Error(), err: err}
}

// At returns err as an *Error (AsError, def for an error that carries no code) whose message is
// first named by where: "where: message". The code and stage err carries are kept and err stays
// its cause. A failure that wraps a coded error with fmt.Errorf and %w loses its prefix to
// AsError, which returns the inner error; a caller that runs many of one thing (a store of
// sweep --stores-under) names which one failed with At instead.
func At(where string, err error, def Code) *Error {
	if err == nil {
		return nil
	}
	e := AsError(err, def)
	return &Error{Stage: e.Stage, Code: e.Code, Message: where + ": " + e.Message, err: err}
}

// CodeOf returns the code err carries, or "" when it carries none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Error makes a Code an error value, so that errors.Is(err, code) asks whether err carries code.
func (c Code) Error() string { return string(c) }

// Is reports whether target is the Code e carries (errors.Is(err, fault.UploadMissing)).
func (e *Error) Is(target error) bool {
	c, ok := target.(Code)
	return ok && e.Code == c
}
