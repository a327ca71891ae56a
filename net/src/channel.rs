//! A channel: the connection between one sending subtask and one receiving
//! subtask, made of two SPSC rings.
//!
//! The forward ring carries [`ChannelEvent`]s in order; its capacity is the
//! channel's credit (how many buffers may be in flight). The return ring
//! carries consumed buffers back to the sender's [`BufferPool`](crate::BufferPool); it is sized
//! so a return never fails. Each side rings the other side's [`Doorbell`]
//! after publishing, so a parked worker wakes up.

use crate::buffer::NetworkBuffer;
use crate::doorbell::Doorbell;
use crate::event::ChannelEvent;
use crate::ring::{ring, Consumer, Producer};
use crate::sync::Arc;

/// The sending end of a channel.
pub struct ChannelSender {
    events: Producer<ChannelEvent>,
    receiver_bell: Arc<Doorbell>,
}

impl ChannelSender {
    /// Sends `event`, or hands it back if the receiver granted no more
    /// credit (the ring is full).
    #[inline]
    pub fn send(&mut self, event: ChannelEvent) -> Result<(), ChannelEvent> {
        self.events.push(event)?;
        self.receiver_bell.ring();
        Ok(())
    }

    /// True if the receiver has room for another event.
    #[inline]
    pub fn has_credit(&mut self) -> bool {
        !self.events.is_full()
    }

    /// Events in flight (sent, not yet taken by the receiver).
    pub fn in_flight(&self) -> usize {
        self.events.len()
    }
}

/// The receiving end of a channel.
pub struct ChannelReceiver {
    events: Consumer<ChannelEvent>,
    returns: Producer<NetworkBuffer>,
    sender_bell: Arc<Doorbell>,
}

impl ChannelReceiver {
    /// Takes the next event, if any.
    #[inline]
    pub fn recv(&mut self) -> Option<ChannelEvent> {
        let was_full = self.events.queued() == self.events.capacity();
        let event = self.events.pop()?;
        if was_full {
            // The sender may be parked waiting for credit.
            self.sender_bell.ring();
        }
        Some(event)
    }

    /// True if nothing is waiting.
    #[inline]
    pub fn is_empty(&mut self) -> bool {
        self.events.is_empty()
    }

    /// Gives a consumed buffer back to the sender's pool.
    #[inline]
    pub fn recycle(&mut self, mut buffer: NetworkBuffer) {
        buffer.clear();
        if self.returns.push(buffer).is_err() {
            // The return ring holds every buffer of the sender's pool, so
            // this would mean a buffer came from somewhere else.
            panic!("return ring overflow: a buffer was returned to the wrong pool");
        }
        self.sender_bell.ring();
    }
}

/// Creates a channel.
///
/// `credit` bounds the events in flight. `return_capacity` must be at least
/// the number of buffers in the sender's pool, so that a return never fails;
/// the returned `Consumer` is that pool's return path for this channel
/// ([`crate::BufferPool::add_return_path`]).
pub fn channel(
    credit: usize,
    return_capacity: usize,
    sender_bell: Arc<Doorbell>,
    receiver_bell: Arc<Doorbell>,
) -> (ChannelSender, ChannelReceiver, Consumer<NetworkBuffer>) {
    let (ev_tx, ev_rx) = ring(credit);
    let (ret_tx, ret_rx) = ring(return_capacity.max(1));
    (
        ChannelSender {
            events: ev_tx,
            receiver_bell,
        },
        ChannelReceiver {
            events: ev_rx,
            returns: ret_tx,
            sender_bell,
        },
        ret_rx,
    )
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::buffer::BufferPool;

    #[test]
    fn buffers_travel_and_come_back() {
        let bell_s = Arc::new(Doorbell::new());
        let bell_r = Arc::new(Doorbell::new());
        let mut pool = BufferPool::new(3, 64);
        let (mut tx, mut rx, returns) = channel(2, 3, bell_s, bell_r);
        pool.add_return_path(returns);
        for i in 0..100u64 {
            let mut b = loop {
                if let Some(b) = pool.request() {
                    break b;
                }
                // Play the receiver while the sender is out of buffers.
                match rx.recv() {
                    Some(ChannelEvent::Buffer(b)) => rx.recycle(b),
                    _ => panic!("expected a buffer"),
                }
            };
            assert!(b.try_append(&i));
            let mut ev = ChannelEvent::Buffer(b);
            loop {
                match tx.send(ev) {
                    Ok(()) => break,
                    Err(back) => {
                        ev = back;
                        let Some(ChannelEvent::Buffer(b)) = rx.recv() else {
                            panic!("expected a buffer")
                        };
                        rx.recycle(b);
                    }
                }
            }
        }
        tx.send(ChannelEvent::EndOfPartition).ok();
        let mut seen = 0;
        while let Some(ev) = rx.recv() {
            match ev {
                ChannelEvent::Buffer(b) => {
                    seen += 1;
                    rx.recycle(b)
                }
                ChannelEvent::EndOfPartition => break,
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(seen > 0);
        pool.reclaim();
        assert_eq!(pool.available(), 3, "every buffer returned to its pool");
    }
}
