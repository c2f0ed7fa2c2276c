package local

import "golang.org/x/sys/unix"

// fsID names the file system a file is on. On Linux a bind mount of a folder of the same file
// system has the same device number, so the mount id tells them apart.
type fsID struct{ dev, mnt uint64 }

func fsOf(fd int) (fsID, error) {
	var stx unix.Statx_t
	err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &stx)
	if err != nil {
		return fsID{}, err
	}
	id := fsID{dev: uint64(unix.Mkdev(stx.Dev_major, stx.Dev_minor))}
	if stx.Mask&unix.STATX_MNT_ID != 0 {
		id.mnt = stx.Mnt_id
	}
	return id, nil
}
