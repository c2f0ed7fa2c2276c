// Command mkarchive writes a release archive whose bytes depend only on the files it is given:
// entries in the order given, one modification time for all (SOURCE_DATE_EPOCH), owner 0, modes
// 0755 for executables and 0644 for the rest, no other metadata. scripts/release.sh uses it so
// that two runs give the same bytes (tar and zip differ in how they can be told that).
//
//	mkarchive -o attachctl-v1.0.0-linux-amd64.tar.gz -prefix attachctl-v1.0.0-linux-amd64 -mtime 1764547200 FILE...
//
// The archive is a .tar.gz or a .zip, by the name given to -o. A FILE is NAME=PATH to store PATH
// as NAME, or PATH to store it under its base name.
package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	out := flag.String("o", "", "the archive to write (.tar.gz or .zip)")
	prefix := flag.String("prefix", "", "the folder every entry goes in")
	mtime := flag.Int64("mtime", 315532800, "the modification time of every entry, in seconds since 1970")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: mkarchive -o FILE.tar.gz|FILE.zip [-prefix DIR] [-mtime SECONDS] [NAME=]PATH...")
		os.Exit(2)
	}
	if err := write(*out, *prefix, time.Unix(*mtime, 0).UTC(), flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "mkarchive:", err)
		os.Remove(*out)
		os.Exit(1)
	}
}

type entry struct {
	name string
	data []byte
	mode int64
}

func write(out, prefix string, mtime time.Time, args []string) error {
	var entries []entry
	for _, a := range args {
		name, p, ok := strings.Cut(a, "=")
		if !ok {
			name, p = filepath.Base(a), a
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		mode := int64(0o644)
		if fi.Mode()&0o111 != 0 {
			mode = 0o755
		}
		entries = append(entries, entry{path.Join(prefix, filepath.ToSlash(name)), data, mode})
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	switch {
	case strings.HasSuffix(out, ".tar.gz"):
		err = writeTarGz(f, entries, mtime)
	case strings.HasSuffix(out, ".zip"):
		err = writeZip(f, entries, mtime)
	default:
		err = fmt.Errorf("%s: the archive is a .tar.gz or a .zip", out)
	}
	if err != nil {
		return err
	}
	return f.Close()
}

func writeTarGz(w io.Writer, entries []entry, mtime time.Time) error {
	gz, err := gzip.NewWriterLevel(w, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	// The gzip header carries no name and no time.
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.data)), ModTime: mtime,
			Typeflag: tar.TypeReg, Format: tar.FormatPAX, Uname: "root", Gname: "root"}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func writeZip(w io.Writer, entries []entry, mtime time.Time) error {
	zw := zip.NewWriter(w)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: mtime}
		h.SetMode(os.FileMode(e.mode))
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := fw.Write(e.data); err != nil {
			return err
		}
	}
	return zw.Close()
}
