//! Appending a value's wire bytes to a buffer: the step every codec of
//! state and channel data shares.

use weir_net::Wire;

/// Appends `value`'s wire bytes to `buf`.
#[inline]
pub(crate) fn append_wire<T: Wire>(buf: &mut Vec<u8>, value: &T) {
    let n = value.encoded_len();
    if n <= 32 {
        // Small fixed-size values: encode on the stack, then one copy.
        let mut tmp = [0u8; 32];
        value.write(&mut tmp[..n]);
        buf.extend_from_slice(&tmp[..n]);
    } else {
        let at = buf.len();
        buf.resize(at + n, 0);
        value.write(&mut buf[at..]);
    }
}
