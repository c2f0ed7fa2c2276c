package manifest_test

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/attachctl/attachctl/manifest"
)

// A stage reads records, fills what it knows, and writes them on: fields it does not know (here
// "ticket") pass through byte for byte, after the known ones.
func ExampleReader() {
	in := strings.NewReader(`{"ticket":"T-1","path":"shot.png"}` + "\n" + `{"path":"notes.txt","size":12}` + "\n")
	r := manifest.NewReader(in)
	w := manifest.NewWriter(os.Stdout)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		if rec.Name == "" {
			rec.Name = rec.Path
		}
		if err := w.Write(rec); err != nil {
			fmt.Println(err)
			return
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"path":"shot.png","name":"shot.png","ticket":"T-1"}
	// {"path":"notes.txt","name":"notes.txt","size":12}
}

// A line that is not a record is refused with its line number and the manifest.invalid code.
func ExampleReader_invalid() {
	r := manifest.NewReader(strings.NewReader(`{"path":"a"}` + "\n" + `["a","b"]` + "\n"))
	for {
		_, err := r.Next()
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	// Output:
	// manifest line 2: a record must be a JSON object (manifest.invalid)
}
