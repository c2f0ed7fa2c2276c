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
