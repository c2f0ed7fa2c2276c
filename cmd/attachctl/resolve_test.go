package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/attachctl/attachctl/ops/store/open"
	"github.com/attachctl/attachctl/ops/store/storetest"
	"github.com/zeebo/blake3"
)

// Test programs for the prompt, resolve and prepare scripts:
//
//	mkpng FILE SIZE [SEED [COUNT]] a valid, incompressible PNG of exactly SIZE bytes; with COUNT,
//	                              COUNT of them, FILE a printf pattern of their index, seeds SEED+i
//	mkbytes FILE SIZE [SEED]      SIZE random bytes (a binary file)
//	mkpartial STORE NAME OUT      begins an upload NAME in STORE (never finished); its id into OUT
//	acpvalidate FILE              FILE validates against ACP v1's PromptRequest (params or request):
//	                              runs scripts/acpvalidate, which TestScript builds ($ACPVALIDATE)
//	acpcheck OUT IN SRCDIR        OUT resolves IN: no block of OUT keeps _meta.acpmux.upload, and
//	                              every inline image or audio's bytes and every linked or embedded
//	                              file's BLAKE3 equal SRCDIR/<the name IN's block gives>; prints
//	                              the counts
//	fillid IN OUT NAME=FILE...    copies IN to OUT with each @NAME@ replaced by FILE's content
func init() {
	for name, f := range map[string]func(helper, []string) error{
		"mkpng": rsMkPNG, "mkbytes": rsMkBytes, "mkpartial": rsMkPartial,
		"acpvalidate": rsValidate, "acpcheck": rsCheck, "fillid": rsFillID,
	} {
		helperCmds[name] = f
	}
}

func rsSizeSeed(args []string) (int, uint64, error) {
	if len(args) < 2 {
		return 0, 0, fmt.Errorf("usage: FILE SIZE [SEED]")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil {
		return 0, 0, err
	}
	var seed uint64
	if len(args) > 2 {
		if seed, err = strconv.ParseUint(args[2], 10, 64); err != nil {
			return 0, 0, err
		}
	}
	return n, seed, nil
}

// rsMkPNG writes a 16x12 PNG of random pixels, stored without compression and padded to the size
// with a private ancillary chunk of random bytes: decoders take it, nothing compresses it.
func rsMkPNG(sc helper, args []string) error {
	size, seed, err := rsSizeSeed(args)
	if err != nil {
		return err
	}
	if len(args) > 3 {
		n, err := strconv.Atoi(args[3])
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			one := []string{fmt.Sprintf(args[0], i), args[1], strconv.FormatUint(seed+uint64(i)*2, 10)}
			if err := rsMkPNG(sc, one); err != nil {
				return err
			}
		}
		return nil
	}
	img := image.NewNRGBA(image.Rect(0, 0, 16, 12))
	storetest.Fill(img.Pix, seed)
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&buf, img); err != nil {
		return err
	}
	b := buf.Bytes()
	pad := size - len(b) - 12
	if pad < 0 {
		return fmt.Errorf("a PNG of %d bytes is too small", size)
	}
	chunk := make([]byte, 12+pad)
	binary.BigEndian.PutUint32(chunk, uint32(pad))
	copy(chunk[4:], "paDd")
	storetest.Fill(chunk[8:8+pad], seed+1)
	binary.BigEndian.PutUint32(chunk[8+pad:], crc32.ChecksumIEEE(chunk[4:8+pad]))
	out := append(append(append([]byte{}, b[:len(b)-12]...), chunk...), b[len(b)-12:]...)
	return os.WriteFile(sc.abs(args[0]), out, 0o644)
}

func rsMkBytes(sc helper, args []string) error {
	size, seed, err := rsSizeSeed(args)
	if err != nil {
		return err
	}
	b := make([]byte, size)
	storetest.Fill(b, seed)
	if size > 0 {
		b[0] = 0 // never text
	}
	return os.WriteFile(sc.abs(args[0]), b, 0o644)
}

func rsMkPartial(sc helper, args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("usage: mkpartial STORE NAME OUT")
	}
	b, err := open.Store(context.Background(), sc.abs(args[0]), open.Options{})
	if err != nil {
		return err
	}
	id, err := b.Begin(context.Background(), args[1], 100)
	if err != nil {
		return err
	}
	return os.WriteFile(sc.abs(args[2]), []byte(id), 0o644)
}

func rsFillID(sc helper, args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: fillid IN OUT NAME=FILE...")
	}
	b, err := os.ReadFile(sc.abs(args[0]))
	if err != nil {
		return err
	}
	s := string(b)
	for _, kv := range args[2:] {
		k, file, _ := strings.Cut(kv, "=")
		v, err := os.ReadFile(sc.abs(file))
		if err != nil {
			return err
		}
		s = strings.ReplaceAll(s, "@"+k+"@", strings.TrimSpace(string(v)))
	}
	return os.WriteFile(sc.abs(args[1]), []byte(s), 0o644)
}

// rsSchemaFile is testdata/acp/schema.json, found from $SAMPLES (testdata/samples) in scripts.
func rsSchemaFile(sc helper) string {
	if s := sc.getenv("SAMPLES"); s != "" {
		return filepath.Join(s, "..", "acp", "schema.json")
	}
	return "../../testdata/acp/schema.json"
}

// rsRequest checks that a decoded document with params is a JSON-RPC session/prompt request.
// acpcheck decodes a document once, whether it is params or a request holding them: the
// documents hold megabytes of base64, and every pass over them is slow in the -race test binary
// the helpers run as.
func rsRequest(jsonrpc, method any, hasID bool) error {
	if jsonrpc != "2.0" || method != "session/prompt" || !hasID {
		return fmt.Errorf("not a JSON-RPC session/prompt request")
	}
	return nil
}

// rsValidate runs the validator TestScript built (scripts/acpvalidate) on FILE, with the schema.
func rsValidate(sc helper, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: acpvalidate FILE")
	}
	bin := sc.getenv("ACPVALIDATE")
	if bin == "" {
		return fmt.Errorf("$ACPVALIDATE (the built scripts/acpvalidate) is not set")
	}
	cmd := exec.Command(bin, rsSchemaFile(sc), sc.abs(args[0]))
	cmd.Stdout, cmd.Stderr = sc.stdout, sc.stderr
	return cmd.Run()
}

func rsCheck(sc helper, args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("usage: acpcheck OUT IN SRCDIR")
	}
	var p, in rsPromptBlocks
	for i, dst := range []*rsPromptBlocks{&p, &in} {
		doc, err := os.ReadFile(sc.abs(args[i]))
		if err != nil {
			return err
		}
		var d struct {
			JSONRPC any             `json:"jsonrpc"`
			Method  any             `json:"method"`
			ID      json.RawMessage `json:"id"`
			Params  *rsPromptBlocks `json:"params"`
			rsPromptBlocks
		}
		if err := json.Unmarshal(doc, &d); err != nil {
			return fmt.Errorf("%s: %v", args[i], err)
		}
		*dst = d.rsPromptBlocks
		if d.Params != nil {
			if err := rsRequest(d.JSONRPC, d.Method, d.ID != nil); err != nil {
				return err
			}
			*dst = *d.Params
		}
	}
	src := func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(sc.abs(args[2]), name)) }
	sameFile := func(uri, name string) error {
		u, err := url.Parse(uri)
		if err != nil || u.Scheme != "file" {
			return fmt.Errorf("%s: %q is not a file URI", name, uri)
		}
		got, err := os.ReadFile(u.Path)
		if err != nil {
			return err
		}
		want, err := src(name)
		if err != nil {
			return err
		}
		if blake3.Sum256(got) != blake3.Sum256(want) {
			return fmt.Errorf("%s: BLAKE3 of %s differs from the source", name, u.Path)
		}
		return nil
	}
	// The text block before each inline image or audio names it: taken out here (the blocks then
	// line up with the input's), and checked against the file the input's block names.
	named := map[int]string{}
	kept := p.Prompt[:0:0]
	for i, b := range p.Prompt {
		if b.Type == "text" && !b.Meta.Acpmux.Context && i+1 < len(p.Prompt) && (p.Prompt[i+1].Type == "image" || p.Prompt[i+1].Type == "audio") &&
			(strings.HasPrefix(b.Text, "Image ") || strings.HasPrefix(b.Text, "Audio ")) && strings.Contains(b.Text, ", on disk at ") {
			named[len(kept)] = b.Text
			continue
		}
		kept = append(kept, b)
	}
	p.Prompt = kept
	counts := map[string]int{}
	for i, b := range p.Prompt {
		if b.Meta.Acpmux.Upload != nil {
			return fmt.Errorf("block %d: a resolved block keeps _meta.acpmux.upload", i)
		}
		name := ""
		if i < len(in.Prompt) && in.Prompt[i].Meta.Acpmux.Upload != nil {
			name = in.Prompt[i].Meta.Acpmux.Upload.FileName // the source the input's block names
			if rel := in.Prompt[i].Meta.Acpmux.Upload.Rel; rel != "" {
				name = rel // a file of a folder walked with --each: its path in SRCDIR
			}
		}
		switch {
		case b.Type == "text" && b.Meta.Acpmux.Context:
			counts["context"]++
		case b.Type == "text":
			counts["text"]++
		case name == "":
			counts["other"]++
		case b.Type == "image" || b.Type == "audio":
			if !strings.Contains(named[i], " "+name+" (") {
				return fmt.Errorf("block %d: inline %s, not named by the text before it (%q)", i, name, named[i])
			}
			data, err := base64.StdEncoding.DecodeString(b.Data)
			if err != nil {
				return fmt.Errorf("block %d: %v", i, err)
			}
			want, err := src(name)
			if err != nil {
				return err
			}
			if !bytes.Equal(data, want) {
				return fmt.Errorf("block %d: inline bytes of %s differ from the source", i, name)
			}
			counts[b.Type]++
		case b.Type == "resource_link":
			if b.Name != name {
				return fmt.Errorf("block %d: name %q, upload %q", i, b.Name, name)
			}
			if err := sameFile(b.URI, name); err != nil {
				return fmt.Errorf("block %d: %v", i, err)
			}
			counts["link"]++
		case b.Type == "resource" && b.Resource != nil:
			want, err := src(name)
			if err != nil {
				return err
			}
			if b.Resource.Text != string(want) {
				return fmt.Errorf("block %d: embedded text of %s differs from the source", i, name)
			}
			if err := sameFile(b.Resource.URI, name); err != nil {
				return fmt.Errorf("block %d: %v", i, err)
			}
			counts["resource"]++
		default:
			return fmt.Errorf("block %d: unexpected %s block", i, b.Type)
		}
	}
	fmt.Fprintf(sc.stdout, "image %d audio %d resource %d link %d context %d text %d other %d\n", counts["image"], counts["audio"],
		counts["resource"], counts["link"], counts["context"], counts["text"], counts["other"])
	return nil
}

// rsPromptBlocks is what acpcheck reads of a prompt's blocks.
type rsPromptBlocks struct {
	Prompt []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		URI      string `json:"uri"`
		Name     string `json:"name"`
		Size     int64  `json:"size"`
		Resource *struct {
			URI  string `json:"uri"`
			Text string `json:"text"`
		} `json:"resource"`
		Meta struct {
			Acpmux struct {
				Context bool `json:"context"`
				Upload  *struct {
					FileName string `json:"fileName"`
					Rel      string `json:"rel"`
				} `json:"upload"`
			} `json:"acpmux"`
		} `json:"_meta"`
	} `json:"prompt"`
}
