package ops

import "testing"

func TestB3sumLines(t *testing.T) {
	h := "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
	tests := []struct{ path, line string }{
		{"/s/a b.txt", h + "  /s/a b.txt\n"},
		{"/s/back\\slash", "\\" + h + "  /s/back\\\\slash\n"},
		{"/s/new\nline", "\\" + h + "  /s/new\\nline\n"},
	}
	for _, tt := range tests {
		line := B3sumLine(h, tt.path)
		if line != tt.line {
			t.Errorf("B3sumLine(%q) = %q, want %q", tt.path, line, tt.line)
		}
		gh, gp, err := ParseB3sumLine(line[:len(line)-1])
		if err != nil || gh != h || gp != tt.path {
			t.Errorf("ParseB3sumLine(%q) = %q %q %v", line, gh, gp, err)
		}
	}
	for _, bad := range []string{"", h, h + " one-space", "XYZ  p", "\\" + h + "  bad\\escape", h[:63] + "  p"} {
		if _, _, err := ParseB3sumLine(bad); err == nil {
			t.Errorf("ParseB3sumLine(%q) accepted", bad)
		}
	}
}
