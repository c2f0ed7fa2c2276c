// Copyright 2009 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package jpeg

import (
	"encoding/binary"
	"io"
	mathbits "math/bits"
)

// maxCodeLength is the maximum (inclusive) number of bits in a Huffman code.
const maxCodeLength = 16

// maxNCodes is the maximum (inclusive) number of codes in a Huffman tree.
const maxNCodes = 256

// lutSize is the log-2 size of the standard library's Huffman look-up table. It is still built
// (in processDHT, as a local) because the wider tables below are derived from it.
const lutSize = 8

// lutBits is the log-2 size of this package's look-up tables, indexed by the next lutBits bits.
const lutBits = 10

// huffman is a Huffman decoder, specified in section C.
type huffman struct {
	// length is the number of codes in the tree.
	nCodes int32
	// lut gives, for the next lutBits bits of the stream, what the standard library's
	// decodeHuffman returns for them when at least 8 bits are buffered: the high 8 bits of
	// the uint16 are the decoded value and the low 8 bits the code length, or 0 if the
	// code was not found within lutBits bits (the bit-by-bit slow path then decides).
	lut [1 << lutBits]uint16
	// fast gives, for the next lutBits bits, an AC symbol decoded together with its
	// extra bits (RECEIVE and EXTEND) when both fit in lutBits bits, or 0. See fastEntry.
	fast [1 << lutBits]int32
	// vals are the decoded values, sorted by their encoding.
	vals [maxNCodes]uint8
	// minCodes[i] is the minimum code of length i, or -1 if there are no
	// codes of that length.
	minCodes [maxCodeLength]int32
	// maxCodes[i] is the maximum code of length i, or -1 if there are no
	// codes of that length.
	maxCodes [maxCodeLength]int32
	// valsIndices[i] is the index into vals of minCodes[i].
	valsIndices [maxCodeLength]int32
}

// A fast entry packs an AC symbol with its coefficient: bits 0-4 are the number of bits the
// code and its extra bits take, bits 8-11 the zero run, bit 12 marks the end of block (symbol
// 0x00, whose entry has no run or value), and bits 16-31 the coefficient (signed). Entries
// are never 0 when valid, as every code is at least 1 bit long.
const (
	fastLenMask = 0x1f
	fastEOB     = 1 << 12
)

// errShortHuffmanData means that an unexpected EOF occurred while decoding
// Huffman data.
// (It and errMissingFF00 are of type error, unlike in the standard library, so that storing
// them in bits.end does not allocate; they compare equal to the FormatError values.)
var errShortHuffmanData error = FormatError("short Huffman data")

// errMissingFF00 means that the entropy-coded data met an 0xff byte (a marker byte) that
// wasn't the expected byte-stuffed sequence 0xff, 0x00.
var errMissingFF00 error = FormatError("missing 0xff00 sequence")

// bits holds the unprocessed bits that have been taken from the byte-stream.
//
// Unlike the standard library, which reads one byte when it runs short, this reader takes up
// to 8 bytes at a time ahead of need. To be exact, it keeps two things the standard library
// gets from reading lazily: where the entropy-coded segment ends (a marker or the end of the
// input) and with which error, reported only when a bit beyond it is actually wanted; and how
// many raw bytes the data bytes still in the accumulator took (a stuffed 0xff takes two), so
// that finishSegment can give them back. The standard library's position after a segment is
// always ceil(bits consumed / 8) data bytes from its start: its lazy reads leave fewer than 16
// bits unread and its readFull gives back one byte when 8 or more are.
type bits struct {
	// a holds the n unread bits in its most significant bits. The bits below them are zero
	// or, after a fast refill, the bits of the bytes that follow in the stream (the refill
	// after will OR the same bits in again).
	a uint64
	n int32 // the number of unread bits in a; at most 63.
	// stuffed has bit k set if the data byte taken k bytes before the last one taken (0 is
	// the last) was a byte-stuffed 0xff, which took two bytes of input.
	stuffed uint64
	// end is why no more bytes can be taken for this segment: errMissingFF00 at a marker,
	// errShortHuffmanData at the end of the input, or the reader's error; nil if not met.
	end error
}

// noFF reports whether none of the 8 bytes in w is 0xff.
func noFF(w uint64) bool {
	x := ^w // a zero byte in x is an 0xff byte in w
	return (x-0x0101010101010101)&^x&0x8080808080808080 == 0
}

// refill tops up d.bits to at least 56 bits, unless the segment ends first (then d.bits.end
// says why). It takes 8 bytes at a time when they hold no 0xff, else one byte at a time.
func (d *decoder) refill() {
	if d.bits.end != nil {
		return
	}
	if i := d.bytes.i; i+8 <= d.bytes.j {
		if w := binary.BigEndian.Uint64(d.bytes.buf[i : i+8]); noFF(w) {
			n := d.bits.n
			d.bits.a |= w >> uint(n)
			k := (63 - n) >> 3
			d.bytes.i = i + int(k)
			d.bits.n = n + 8*k
			d.bits.stuffed <<= uint(k)
			return
		}
	}
	d.refillSlow()
}

// refillSlow is refill one byte at a time, with byte stuffing and markers, and reading from
// the underlying io.Reader when the buffer runs out, as the standard library's
// readByteStuffedByte does.
func (d *decoder) refillSlow() {
	for d.bits.n < 56 {
		for d.bytes.i == d.bytes.j {
			if err := d.fill(); err != nil {
				d.endSegment(err)
				return
			}
		}
		c := d.bytes.buf[d.bytes.i]
		d.bytes.i++
		stuffed := uint64(0)
		if c == 0xff {
			for d.bytes.i == d.bytes.j {
				if err := d.fill(); err != nil {
					d.bytes.i-- // back to the 0xff (fill keeps the bytes before i)
					d.endSegment(err)
					return
				}
			}
			if d.bytes.buf[d.bytes.i] != 0x00 {
				d.bytes.i-- // a marker: leave it for the caller
				d.endSegment(errMissingFF00)
				return
			}
			d.bytes.i++
			stuffed = 1
		}
		d.bits.a |= uint64(c) << uint(56-d.bits.n)
		d.bits.n += 8
		d.bits.stuffed = d.bits.stuffed<<1 | stuffed
	}
}

func (d *decoder) endSegment(err error) {
	if err == io.ErrUnexpectedEOF {
		err = errShortHuffmanData
	}
	d.bits.end = err
}

// finishSegment gives back the whole bytes still unread in d.bits, so that the input is where
// the standard library would have left it, and resets d.bits.
func (d *decoder) finishSegment() {
	u := uint(d.bits.n >> 3)
	d.bytes.i -= int(u) + mathbits.OnesCount64(d.bits.stuffed&(1<<u-1))
	d.bits = bits{}
}

// receiveExtend is the composition of RECEIVE and EXTEND, specified in section
// F.2.2.1.
func (d *decoder) receiveExtend(t uint8) (int32, error) {
	if d.bits.n < int32(t) {
		d.refill()
		if d.bits.n < int32(t) {
			return 0, d.bits.end
		}
	}
	x := int32(d.bits.a >> (64 - uint(t))) // 0 when t == 0
	d.bits.a <<= t
	d.bits.n -= int32(t)
	s := int32(1) << t
	if x < s>>1 {
		x += ((-1) << t) + 1
	}
	return x, nil
}

// processDHT processes a Define Huffman Table marker, and initializes a huffman
// struct from its contents. Specified in section B.2.4.2.
func (d *decoder) processDHT(n int) error {
	for n > 0 {
		if n < 17 {
			return FormatError("DHT has wrong length")
		}
		if err := d.readFull(d.tmp[:17]); err != nil {
			return err
		}
		tc := d.tmp[0] >> 4
		if tc > maxTc {
			return FormatError("bad Tc value")
		}
		th := d.tmp[0] & 0x0f
		// The baseline th <= 1 restriction is specified in table B.5.
		if th > maxTh || (d.baseline && th > 1) {
			return FormatError("bad Th value")
		}
		h := &d.huff[tc][th]

		// Read nCodes and h.vals (and derive h.nCodes).
		// nCodes[i] is the number of codes with code length i.
		// h.nCodes is the total number of codes.
		h.nCodes = 0
		var nCodes [maxCodeLength]int32
		for i := range nCodes {
			nCodes[i] = int32(d.tmp[i+1])
			h.nCodes += nCodes[i]
		}
		if h.nCodes == 0 {
			return FormatError("Huffman table has zero length")
		}
		if h.nCodes > maxNCodes {
			return FormatError("Huffman table has excessive length")
		}
		n -= int(h.nCodes) + 17
		if n < 0 {
			return FormatError("DHT has wrong length")
		}
		if err := d.readFull(h.vals[:h.nCodes]); err != nil {
			return err
		}

		// Derive the standard library's 8-bit look-up table, exactly as it does (including
		// what it does with malformed tables).
		var lut [1 << lutSize]uint16
		var x, code uint32
		for i := uint32(0); i < lutSize; i++ {
			code <<= 1
			for j := int32(0); j < nCodes[i]; j++ {
				// The codeLength is 1+i, so shift code by 8-(1+i) to
				// calculate the high bits for every 8-bit sequence
				// whose codeLength's high bits matches code.
				// The high 8 bits of lutValue are the encoded value.
				// The low 8 bits are 1 plus the codeLength.
				base := uint8(code << (7 - i))
				lutValue := uint16(h.vals[x])<<8 | uint16(2+i)
				for k := uint8(0); k < 1<<(7-i); k++ {
					lut[base|k] = lutValue
				}
				code++
				x++
			}
		}

		// Derive minCodes, maxCodes, and valsIndices.
		var c, index int32
		for i, n := range nCodes {
			if n == 0 {
				h.minCodes[i] = -1
				h.maxCodes[i] = -1
				h.valsIndices[i] = -1
			} else {
				h.minCodes[i] = c
				h.maxCodes[i] = c + n - 1
				h.valsIndices[i] = index
				c += n
				index += n
			}
			c <<= 1
		}

		h.buildTables(&lut)
	}
	return nil
}

// buildTables derives h.lut and h.fast from the standard library's 8-bit table and the
// canonical code bounds, by working out for every lutBits-bit pattern what the standard
// library's decodeHuffman would do with it: its 8-bit table first, then its bit-by-bit slow
// path. So the wider tables agree with it even for malformed (over-subscribed) tables.
//
// Where the 8-bit table has no entry, the slow path cannot match a code of 8 bits or fewer (a
// match of length L there means an L-bit code between minCodes and maxCodes, which processDHT
// entered in the 8-bit table), so the search starts at 9 bits, from the 8 bits read.
func (h *huffman) buildTables(lut8 *[1 << lutSize]uint16) {
	long := false // codes of 9 to lutBits bits
	for i := lutSize; i < lutBits; i++ {
		long = long || h.maxCodes[i] >= 0
	}
	for p := range h.lut {
		h.lut[p], h.fast[p] = 0, 0
		value, length := uint8(0), 0
		if v := lut8[p>>(lutBits-lutSize)]; v != 0 {
			value, length = uint8(v>>8), int(v&0xff)-1
		} else if long {
			code := int32(p >> (lutBits - lutSize))
			for i := lutSize; i < lutBits; i++ {
				code = code<<1 | int32(p>>(lutBits-1-i))&1
				if code <= h.maxCodes[i] {
					k := h.valsIndices[i] + code - h.minCodes[i]
					if k < 0 || k >= maxNCodes {
						break // cannot happen; left to the slow path, as in the standard library
					}
					value, length = h.vals[k], i+1
					break
				}
			}
		}
		if length == 0 {
			continue
		}
		h.lut[p] = uint16(value)<<8 | uint16(length)

		// The fast AC entry: the symbol's run and size, and the coefficient when the size's
		// extra bits are within the pattern too.
		run, size := int32(value>>4), int(value&0x0f)
		switch {
		case value == 0x00:
			h.fast[p] = fastEOB | int32(length)
		case size != 0 && length+size <= lutBits:
			t := uint(size)
			x := int32(p>>(lutBits-length-size)) & (1<<t - 1)
			if x < 1<<(t-1) {
				x += ((-1) << t) + 1
			}
			h.fast[p] = x<<16 | run<<8 | int32(length+size)
		}
	}
}

// decodeHuffman returns the next Huffman-coded value from the bit-stream,
// decoded according to h.
func (d *decoder) decodeHuffman(h *huffman) (uint8, error) {
	if h.nCodes == 0 {
		return 0, FormatError("uninitialized Huffman table")
	}

	if d.bits.n < 16 {
		d.refill()
		if d.bits.n < 8 {
			// The standard library tries to read a byte here and fails: at a marker or the
			// end of the input it goes on with the bits it has, on any other error it stops.
			if d.bits.end != errMissingFF00 && d.bits.end != errShortHuffmanData {
				return 0, d.bits.end
			}
			goto slowPath
		}
	}
	if v := h.lut[d.bits.a>>(64-lutBits)]; v != 0 {
		if n := int32(v & 0xff); n <= d.bits.n {
			d.bits.a <<= uint(n)
			d.bits.n -= n
			return uint8(v >> 8), nil
		}
		// The code is longer than what is left of the segment: the slow path fails.
	}

slowPath:
	for i, code := 0, int32(0); i < maxCodeLength; i++ {
		if d.bits.n == 0 {
			d.refill()
			if d.bits.n == 0 {
				return 0, d.bits.end
			}
		}
		code |= int32(d.bits.a >> 63)
		d.bits.a <<= 1
		d.bits.n--
		if code <= h.maxCodes[i] {
			return h.vals[h.valsIndices[i]+code-h.minCodes[i]], nil
		}
		code <<= 1
	}
	return 0, FormatError("bad Huffman code")
}

func (d *decoder) decodeBit() (bool, error) {
	if d.bits.n == 0 {
		d.refill()
		if d.bits.n == 0 {
			return false, d.bits.end
		}
	}
	ret := d.bits.a>>63 != 0
	d.bits.a <<= 1
	d.bits.n--
	return ret, nil
}

func (d *decoder) decodeBits(n int32) (uint32, error) {
	if d.bits.n < n {
		d.refill()
		if d.bits.n < n {
			return 0, d.bits.end
		}
	}
	ret := uint32(d.bits.a >> (64 - uint(n))) // n is 1 to 14
	d.bits.a <<= uint(n)
	d.bits.n -= n
	return ret, nil
}
