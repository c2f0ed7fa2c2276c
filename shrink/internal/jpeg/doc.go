// Package jpeg is a copy of the Go standard library's JPEG decoder (image/jpeg in Go 1.26:
// reader.go, huffman.go, scan.go and the inverse DCT of dct.go; not the encoder), made faster
// for shrink, which decodes 12-megapixel photos and spent about 40% of its time in
// image/jpeg's entropy decoding. It decodes every input to exactly the same image as
// image/jpeg (same type, bounds, subsampling and pixel bytes) and fails on exactly the inputs
// image/jpeg fails on, with the same error; the tests and FuzzDecode compare the two.
//
// What was changed, and why:
//
//   - Entropy decoding (huffman.go) keeps a 64-bit bit accumulator topped up 8 bytes at a time
//     when the next 8 bytes hold no 0xff, instead of one byte per call. Byte stuffing, markers
//     and the end of the input are handled one byte at a time as before. Because it reads
//     ahead, the reader remembers where and why the entropy-coded segment ended, and reports it
//     only when a bit beyond it is wanted, as image/jpeg's lazy reads do; at a restart marker
//     and at the end of a scan it gives back the whole bytes it took ahead (finishSegment), so
//     markers and extraneous data are then read from the same place.
//   - The Huffman look-up tables are 10 bits wide instead of 8. They are derived, for every
//     10-bit pattern, from image/jpeg's own 8-bit table and bit-by-bit slow path, so they agree
//     with it even on malformed tables. A second table gives, for codes whose extra bits also
//     fit in 10 bits, the zero run and the coefficient (or DC difference) at once (decode,
//     RECEIVE and EXTEND in one look-up), and marks end-of-block codes. The AC loop keeps the
//     accumulator in local variables.
//   - Sequential scans multiply coefficients by the quantization table as they are decoded,
//     rather than all 64 in reconstructBlock; the products are the same.
//   - The inverse DCT skips rows whose AC coefficients are zero, and a block with only a DC
//     coefficient is filled with the one value idct would give for it. Both are exact.
//   - Level shift and clipping is branch-free and each row of 8 samples is one store.
//   - The package does not register itself with image.RegisterFormat (image/jpeg does), and
//     uses image/draw instead of the internal imageutil.DrawYCbCr, which draw calls.
//   - DecodeReduced, which image/jpeg does not have, decodes at a half, quarter or eighth of
//     the size, each sample the mean of those the full decode has there (reduced.go): the
//     decoder's shift makes each block 8>>shift samples a side. At shift 0 nothing differs.
//
// Decode and DecodeConfig have image/jpeg's signatures and documentation.
//
// Two caveats. The decoder reads ahead of need, so it may call the io.Reader's Read earlier
// than image/jpeg does. With a reader that keeps failing once it has failed (bytes.Reader,
// bufio.Reader, os.File, any reader at io.EOF) the result is the same; a reader that fails
// once and then returns data again may be seen failing at another point. And
// building the wider tables costs about 10 us a decode, so images below about 100x100 pixels
// decode no faster than with image/jpeg (a 4032x3024 photo decodes 2.2 to 2.4 times as fast).
//
// The copied files keep their copyright notices; the Go licence is in LICENSE.
package jpeg
