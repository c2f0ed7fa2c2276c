package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"strconv"

	"github.com/attachctl/attachctl/ops/store/storetest"

	_ "image/jpeg"
	_ "image/png"
)

// Test programs for the shrink-to-fit scripts:
//
//	mkfit badpng FILE             a PNG signature followed by garbage: no header parses
//	mkfit badjpeg W H FILE [arith] a JPEG whose header says W×H and whose scan is garbage (arith:
//	                              arithmetic coding, SOF9, which Go's decoder does not read)
//	inlineimages FILE             prints each inline image block of the resolved FILE: "image
//	                              W×H FORMAT BYTES" (its data decoded), then "inline N"
//	ondisk STORE NAME SRC         the store holds exactly one finished file NAME, byte for byte SRC
func init() {
	helperCmds["mkfit"] = fitMk
	helperCmds["inlineimages"] = fitInlineImages
	helperCmds["ondisk"] = fitOnDisk
}

func fitMk(sc helper, args []string) error {
	switch {
	case len(args) == 2 && args[0] == "badpng":
		b := make([]byte, 3000)
		storetest.Fill(b, 7)
		return os.WriteFile(sc.abs(args[1]), append([]byte("\x89PNG\r\n\x1a\n"), b...), 0o644)
	case len(args) >= 4 && args[0] == "badjpeg":
		w, err1 := strconv.Atoi(args[1])
		h, err2 := strconv.Atoi(args[2])
		if err1 != nil || err2 != nil {
			return fmt.Errorf("bad size %s×%s", args[1], args[2])
		}
		sof := byte(0xC0)
		if len(args) > 4 && args[4] == "arith" {
			sof = 0xC9
		}
		b := []byte{0xFF, 0xD8, 0xFF, sof, 0, 17, 8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), 3,
			1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1}
		b = append(b, 0xFF, 0xDA, 0, 12, 3, 1, 0, 2, 0x11, 3, 0x11, 0, 63, 0)
		scan := make([]byte, 200_000)
		storetest.Fill(scan, 9)
		for i := range scan {
			if scan[i] == 0xFF {
				scan[i] = 0xFE // no markers inside the scan
			}
		}
		b = append(append(b, scan...), 0xFF, 0xD9)
		return os.WriteFile(sc.abs(args[3]), b, 0o644)
	}
	return fmt.Errorf("usage: mkfit badpng FILE | mkfit badjpeg W H FILE [arith]")
}

func fitInlineImages(sc helper, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: inlineimages FILE")
	}
	b, err := os.ReadFile(sc.abs(args[0]))
	if err != nil {
		return err
	}
	var doc struct {
		Prompt []struct{ Type, Data string }
		Params struct{ Prompt []struct{ Type, Data string } }
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	blocks := append(doc.Prompt, doc.Params.Prompt...)
	n := 0
	for _, bl := range blocks {
		if bl.Type != "image" || bl.Data == "" {
			continue
		}
		data, err := base64.StdEncoding.DecodeString(bl.Data)
		if err != nil {
			return err
		}
		cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("inline image %d: %v", n, err)
		}
		fmt.Fprintf(sc.stdout, "image %d×%d %s %d\n", cfg.Width, cfg.Height, format, len(data))
		n++
	}
	fmt.Fprintf(sc.stdout, "inline %d\n", n)
	return nil
}

func fitOnDisk(sc helper, args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("usage: ondisk STORE NAME SRC")
	}
	m, _ := filepath.Glob(filepath.Join(sc.abs(args[0]), "*", args[1]))
	if len(m) != 1 {
		return fmt.Errorf("%d finished files named %s in %s", len(m), args[1], args[0])
	}
	a, err := os.ReadFile(m[0])
	if err != nil {
		return err
	}
	b, err := os.ReadFile(sc.abs(args[2]))
	if err != nil {
		return err
	}
	if !bytes.Equal(a, b) {
		return fmt.Errorf("%s is not %s", m[0], args[2])
	}
	return nil
}
