package fault_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/attachctl/attachctl/manifest/fault"
)

func TestIsByCode(t *testing.T) {
	cause := fs.ErrNotExist
	wrapped := fmt.Errorf("resolving: %w", fault.Errorf(fault.UploadMissing, "upload %s: %w", "0190", cause))
	for _, c := range []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{"its own code", wrapped, fault.UploadMissing, true},
		{"another code", wrapped, fault.UploadInvalid, false},
		{"the cause through it", wrapped, fs.ErrNotExist, true},
		{"no code at all", cause, fault.UploadMissing, false},
		{"nil", nil, fault.UploadMissing, false},
	} {
		if got := errors.Is(c.err, c.target); got != c.want {
			t.Errorf("%s: errors.Is(%v, %v) = %v, want %v", c.name, c.err, c.target, got, c.want)
		}
	}
}

func TestCodeOfAndAsError(t *testing.T) {
	e := fault.Errorf(fault.StoreFull, "room for %d more", 2)
	if got := e.Error(); got != "room for 2 more (store.full)" {
		t.Errorf("Error() = %q", got)
	}
	for _, c := range []struct {
		err  error
		code fault.Code
	}{
		{e, fault.StoreFull},
		{fmt.Errorf("outer: %w", e), fault.StoreFull},
		{errors.New("plain"), ""},
		{nil, ""},
	} {
		if got := fault.CodeOf(c.err); got != c.code {
			t.Errorf("CodeOf(%v) = %q, want %q", c.err, got, c.code)
		}
	}
	if fault.AsError(nil, fault.FileUnreadable) != nil {
		t.Error("AsError(nil) is not nil")
	}
	plain := errors.New("disk on fire")
	a := fault.AsError(plain, fault.FileUnreadable)
	if a.Code != fault.FileUnreadable || a.Message != "disk on fire" || !errors.Is(a, plain) {
		t.Errorf("AsError(plain) = %+v", a)
	}
	if fault.AsError(fmt.Errorf("x: %w", e), fault.FileUnreadable) != e {
		t.Error("AsError does not return the coded error it wraps")
	}
}

func Example() {
	err := fmt.Errorf("verify: %w", fault.Errorf(fault.VerifyMismatch, "report.pdf: BLAKE3 differs"))
	if errors.Is(err, fault.VerifyMismatch) {
		fmt.Println(fault.CodeOf(err))
	}
	// Output: verify.mismatch
}

// TestAt: the failure names where it happened before its own words, and keeps the code, the
// stage and the cause of the error it names; an error with no code takes def.
func TestAt(t *testing.T) {
	inner := fault.Errorf(fault.StoreNotStore, "not a store: %w", fs.ErrNotExist)
	inner.Stage = "sweep"
	e := fault.At(`"/r/a"`, fmt.Errorf("opening: %w", inner), fault.UploadUnreadable)
	if e.Code != fault.StoreNotStore || e.Stage != "sweep" || e.Message != `"/r/a": not a store: file does not exist` ||
		!errors.Is(e, fs.ErrNotExist) || !errors.Is(e, inner) {
		t.Errorf("At(coded) = %+v", e)
	}
	plain := errors.New("disk on fire")
	if e := fault.At("/r/b", plain, fault.UploadUnreadable); e.Code != fault.UploadUnreadable || e.Message != "/r/b: disk on fire" || !errors.Is(e, plain) {
		t.Errorf("At(plain) = %+v", e)
	}
	if fault.At("x", nil, fault.UploadUnreadable) != nil {
		t.Error("At(nil) is not nil")
	}
}
