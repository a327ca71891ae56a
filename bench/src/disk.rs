//! The disk's own sequential rates, measured the way `dd` with `O_DIRECT`
//! measures them (`dd if=/dev/zero of=F bs=2M count=N oflag=direct
//! conv=fsync`, then `iflag=direct` for reading), so that snapshot and
//! restore throughput can be reported next to what the device does on the
//! same machine in the same run.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::time::Instant;

/// Sequential rates of the disk holding a directory.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DiskRates {
    /// Bytes per second written with O_DIRECT, including the final fsync.
    pub write_bytes_per_s: f64,
    /// Bytes per second read back (O_DIRECT, or buffered after dropping
    /// the file from the page cache where O_DIRECT reads are refused).
    pub read_bytes_per_s: f64,
    /// Reads used O_DIRECT.
    pub direct_read: bool,
}

const BLOCK: usize = 2 << 20;

/// A 4096-aligned zeroed buffer of `BLOCK` bytes.
struct Aligned {
    ptr: *mut u8,
    layout: Layout,
}

impl Aligned {
    fn new() -> Self {
        let layout = Layout::from_size_align(BLOCK, 4096).expect("valid layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory allocating an I/O buffer");
        Self { ptr, layout }
    }

    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` points to `BLOCK` initialized (zeroed) bytes owned
        // by `self`, borrowed mutably for the returned lifetime.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, BLOCK) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// Drops `file`'s pages from the page cache (they are clean after fsync),
/// so the next read comes from the device.
pub fn drop_from_page_cache(file: &File) {
    // SAFETY: fadvise on an open descriptor has no memory preconditions.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
    }
}

/// Writes then reads `bytes` (rounded to 2 MiB) in `dir`, like `dd`.
pub fn measure(dir: &Path, bytes: u64) -> std::io::Result<DiskRates> {
    fs::create_dir_all(dir)?;
    let path = dir.join(".weir-disk-rate");
    let blocks = bytes.div_ceil(BLOCK as u64).max(1);
    let mut buf = Aligned::new();
    for (i, b) in buf.as_mut().iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    let total = blocks * BLOCK as u64;
    let started = Instant::now();
    {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path)?;
        for _ in 0..blocks {
            f.write_all(buf.as_mut())?;
        }
        f.sync_all()?;
    }
    let write_bytes_per_s = total as f64 / started.elapsed().as_secs_f64();
    let direct = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .and_then(|mut f| {
            let started = Instant::now();
            for _ in 0..blocks {
                f.read_exact(buf.as_mut())?;
            }
            Ok(started.elapsed())
        });
    let (elapsed, direct_read) = match direct {
        Ok(e) => (e, true),
        Err(_) => {
            let mut f = File::open(&path)?;
            drop_from_page_cache(&f);
            let started = Instant::now();
            for _ in 0..blocks {
                f.read_exact(buf.as_mut())?;
            }
            (started.elapsed(), false)
        }
    };
    let _ = fs::remove_file(&path);
    Ok(DiskRates {
        write_bytes_per_s,
        read_bytes_per_s: total as f64 / elapsed.as_secs_f64(),
        direct_read,
    })
}
