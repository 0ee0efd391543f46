package snapshot

import "golang.org/x/sys/unix"

// statData is the stat information git keeps per index entry, truncated to 32 bits as git does,
// so entries seeded from the user's index compare exactly against fresh lstat results.
type statData struct {
	ctimeS, ctimeNs uint32
	mtimeS, mtimeNs uint32
	dev, ino        uint32
	uid, gid        uint32
	size            uint32
	mode            uint32 // canonical: modeRegular or modeExec for files, modeSymlink, modeTree for dirs
}

// Git modes as they appear in index entries and trees.
const (
	modeTree    uint32 = 0o040000
	modeRegular uint32 = 0o100644
	modeExec    uint32 = 0o100755
	modeSymlink uint32 = 0o120000
	modeGitlink uint32 = 0o160000
	modeFmt     uint32 = 0o170000
)

// canonicalMode maps st_mode to the git mode kind that stat comparison cares about: the file
// type and, for regular files, only the owner's execute bit (git's ce_modified_check_fs).
func canonicalMode(stMode uint32) uint32 {
	switch stMode & unix.S_IFMT {
	case unix.S_IFREG:
		if stMode&0o100 != 0 {
			return modeExec
		}
		return modeRegular
	case unix.S_IFLNK:
		return modeSymlink
	case unix.S_IFDIR:
		return modeTree
	}
	return 0
}

// matches reports whether fresh stat data (disk) shows the same file as recorded stat data. With
// core.fileMode=false the execute bit is not compared.
func (rec *statData) matches(disk *statData, fileMode bool) bool {
	if rec.mtimeS != disk.mtimeS || rec.mtimeNs != disk.mtimeNs ||
		rec.ctimeS != disk.ctimeS || rec.ctimeNs != disk.ctimeNs ||
		rec.size != disk.size || rec.ino != disk.ino || rec.dev != disk.dev ||
		rec.uid != disk.uid || rec.gid != disk.gid {
		return false
	}
	if rec.mode == disk.mode {
		return true
	}
	if fileMode {
		return false
	}
	return rec.mode&modeFmt == disk.mode&modeFmt
}

// gitMatches is git's own comparison (match_stat_data and ie_match_stat in a git built without
// USE_NSEC, as distributions build it): whole seconds, ctime only with core.trustCtime, owner
// and inode only without core.checkStat=minimal, no device. It is used for entries that come
// from the user's index, so the snapshot sees exactly the changes `git add -A` sees.
func (rec *statData) gitMatches(disk *statData, fileMode, trustCtime, checkStat bool) bool {
	if rec.mtimeS != disk.mtimeS || rec.size != disk.size {
		return false
	}
	if trustCtime && checkStat && rec.ctimeS != disk.ctimeS {
		return false
	}
	if checkStat && (rec.uid != disk.uid || rec.gid != disk.gid || rec.ino != disk.ino) {
		return false
	}
	if rec.mode&modeFmt != disk.mode&modeFmt {
		return false
	}
	return !fileMode || rec.mode == disk.mode
}

// before reports whether the recorded mtime is strictly before t (the racy-git test: an entry whose
// mtime is not before the index's own timestamp may have changed unseen in the same tick).
func (rec *statData) mtimeBefore(tS, tNs uint32) bool {
	return rec.mtimeS < tS || rec.mtimeS == tS && rec.mtimeNs < tNs
}

func statFromUnix(st *unix.Stat_t) statData {
	return statData{
		ctimeS:  uint32(st.Ctim.Sec),
		ctimeNs: uint32(st.Ctim.Nsec),
		mtimeS:  uint32(st.Mtim.Sec),
		mtimeNs: uint32(st.Mtim.Nsec),
		dev:     uint32(st.Dev),
		ino:     uint32(st.Ino),
		uid:     st.Uid,
		gid:     st.Gid,
		size:    uint32(st.Size),
		mode:    canonicalMode(uint32(st.Mode)),
	}
}

func fstatFile(f interface{ Fd() uintptr }) (statData, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return statData{}, err
	}
	return statFromUnix(&st), nil
}
