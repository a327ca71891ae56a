//! A channel: the connection between one sending subtask and one receiving
//! subtask, made of SPSC rings.
//!
//! The forward ring carries [`ChannelEvent`]s in order; its capacity is the
//! channel's credit (how many buffers may be in flight). The return ring
//! carries consumed buffers back to the sender's [`BufferPool`](crate::BufferPool); it is sized
//! so a return never fails. A small priority ring carries the barriers of
//! unaligned checkpoints ([`PriorityBarrier`]), which overtake the data:
//! the receiver looks at it before the forward ring. Each side rings the
//! other side's [`Doorbell`] after publishing, so a parked worker wakes up.
//!
//! The receiver may lower the credit below the forward ring's capacity and
//! ask senders to ship smaller buffers ([`ChannelReceiver::announce`]):
//! that is how buffer debloating bounds the data in flight.

use crate::buffer::NetworkBuffer;
use crate::doorbell::Doorbell;
use crate::event::{ChannelEvent, PriorityBarrier};
use crate::ring::{ring, Consumer, Producer};
use crate::sync::{fence, Arc, AtomicUsize, Ordering};

/// Priority barriers that may be outstanding on one channel; a sender
/// whose priority ring is full sends its barrier in band instead.
pub const PRIORITY_CAPACITY: usize = 16;

/// What the receiver announced to the sender (buffer debloating).
struct Announced {
    /// Events the sender may have in flight (at most the ring's capacity).
    credit: AtomicUsize,
    /// Bytes to which the sender fills a buffer before shipping it.
    buffer_size: AtomicUsize,
}

/// The sending end of a channel.
pub struct ChannelSender {
    events: Producer<ChannelEvent>,
    priority: Producer<PriorityBarrier>,
    announced: Arc<Announced>,
    receiver_bell: Arc<Doorbell>,
}

impl ChannelSender {
    /// Sends `event`, or hands it back if the receiver granted no more
    /// credit.
    #[inline]
    pub fn send(&mut self, event: ChannelEvent) -> Result<(), ChannelEvent> {
        if !self.has_credit() {
            return Err(event);
        }
        self.events.push(event)?;
        self.receiver_bell.ring();
        Ok(())
    }

    /// True if the receiver has room for another event.
    #[inline]
    pub fn has_credit(&mut self) -> bool {
        let credit = self.announced.credit.load(Ordering::Relaxed);
        if credit >= self.events.capacity() {
            !self.events.is_full()
        } else {
            self.events.len() < credit
        }
    }

    /// Sends `barrier` ahead of the data in flight, or hands it back if
    /// [`PRIORITY_CAPACITY`] priority barriers are still unread.
    pub fn send_priority(&mut self, barrier: PriorityBarrier) -> Result<(), PriorityBarrier> {
        self.priority.push(barrier)?;
        self.receiver_bell.ring();
        Ok(())
    }

    /// Events pushed into the data ring so far (wrapping): the position a
    /// [`PriorityBarrier`] sent now stands at.
    #[inline]
    pub fn position(&self) -> usize {
        self.events.pushed()
    }

    /// Events in flight (sent, not yet taken by the receiver).
    pub fn in_flight(&self) -> usize {
        self.events.len()
    }

    /// The buffer size the receiver asked for (the full buffer size unless
    /// it debloats).
    #[inline]
    pub fn buffer_size(&self) -> usize {
        self.announced.buffer_size.load(Ordering::Relaxed)
    }
}

/// The receiving end of a channel.
pub struct ChannelReceiver {
    events: Consumer<ChannelEvent>,
    priority: Consumer<PriorityBarrier>,
    announced: Arc<Announced>,
    returns: Producer<NetworkBuffer>,
    sender_bell: Arc<Doorbell>,
}

impl ChannelReceiver {
    /// Takes the next event, if any, and rings the sender if it may be
    /// parked waiting for the credit this returns.
    #[inline]
    pub fn recv(&mut self) -> Option<ChannelEvent> {
        let event = self.events.pop()?;
        let capacity = self.events.capacity();
        if self.announced.credit.load(Ordering::Relaxed) < capacity {
            // Debloated: the sender waits on a credit below the capacity.
            self.sender_bell.ring();
        } else {
            // Was the ring full before this pop? Asked after the pop, behind
            // a fence that pairs with the one of the sender's park: either
            // its re-check sees the room, or this sees the push that filled
            // the ring. (Asked before the pop, a sender that filled the ring
            // and parked in between would sleep until its safety net.)
            fence(Ordering::SeqCst);
            if self.events.queued() + 1 >= capacity {
                self.sender_bell.ring();
            }
        }
        Some(event)
    }

    /// Takes the next priority barrier, if any.
    #[inline]
    pub fn recv_priority(&mut self) -> Option<PriorityBarrier> {
        self.priority.pop()
    }

    /// True if a priority barrier is waiting.
    #[inline]
    pub fn has_priority(&mut self) -> bool {
        !self.priority.is_empty()
    }

    /// Events taken from the data ring so far (wrapping): compare with a
    /// [`PriorityBarrier::position`].
    #[inline]
    pub fn received(&self) -> usize {
        self.events.popped()
    }

    /// True if nothing is waiting.
    #[inline]
    pub fn is_empty(&mut self) -> bool {
        self.events.is_empty()
    }

    /// Events waiting in the data ring.
    pub fn queued(&self) -> usize {
        self.events.queued()
    }

    /// Gives a consumed buffer back to the sender's pool; frees an
    /// unpooled one ([`NetworkBuffer::unpooled`]: no pool counts it, so
    /// no return ring has room for it).
    #[inline]
    pub fn recycle(&mut self, mut buffer: NetworkBuffer) {
        if buffer.is_unpooled() {
            return;
        }
        buffer.clear();
        if self.returns.push(buffer).is_err() {
            // The return ring holds every buffer of the sender's pool, so
            // this would mean a buffer came from somewhere else.
            panic!("return ring overflow: a buffer was returned to the wrong pool");
        }
        self.sender_bell.ring();
    }

    /// Grants the sender `credit` events in flight (clamped to 1 ..= the
    /// ring's capacity) and asks it to ship buffers once they hold
    /// `buffer_size` bytes.
    pub fn announce(&self, credit: usize, buffer_size: usize) {
        let credit = credit.clamp(1, self.events.capacity());
        let old = self.announced.credit.swap(credit, Ordering::Relaxed);
        self.announced
            .buffer_size
            .store(buffer_size.max(1), Ordering::Relaxed);
        if credit > old {
            self.sender_bell.ring();
        }
    }

    /// The credit currently granted.
    pub fn credit(&self) -> usize {
        self.announced.credit.load(Ordering::Relaxed)
    }

    /// The data ring's capacity (the most credit there can be).
    pub fn capacity(&self) -> usize {
        self.events.capacity()
    }
}

/// Creates a channel.
///
/// `credit` bounds the events in flight; `buffer_size` is what senders
/// fill buffers to until the receiver announces otherwise.
/// `return_capacity` must be at least the number of buffers in the sender's
/// pool, so that a return never fails; the returned `Consumer` is that
/// pool's return path for this channel
/// ([`crate::BufferPool::add_return_path`]).
pub fn channel(
    credit: usize,
    return_capacity: usize,
    sender_bell: Arc<Doorbell>,
    receiver_bell: Arc<Doorbell>,
) -> (ChannelSender, ChannelReceiver, Consumer<NetworkBuffer>) {
    let (ev_tx, ev_rx) = ring(credit);
    let (pr_tx, pr_rx) = ring(PRIORITY_CAPACITY);
    let (ret_tx, ret_rx) = ring(return_capacity.max(1));
    let announced = Arc::new(Announced {
        credit: AtomicUsize::new(ev_tx.capacity()),
        buffer_size: AtomicUsize::new(usize::MAX),
    });
    (
        ChannelSender {
            events: ev_tx,
            priority: pr_tx,
            announced: announced.clone(),
            receiver_bell,
        },
        ChannelReceiver {
            events: ev_rx,
            priority: pr_rx,
            announced,
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

    #[test]
    fn a_priority_barrier_overtakes_and_says_where_it_stands() {
        use crate::event::{CheckpointBarrier, PriorityBarrier};
        let bell = Arc::new(Doorbell::new());
        let (mut tx, mut rx, _returns) = channel(4, 4, bell.clone(), bell);
        for _ in 0..3 {
            assert!(tx.send(ChannelEvent::EndOfData).is_ok());
        }
        assert!(matches!(rx.recv(), Some(ChannelEvent::EndOfData)));
        let barrier = CheckpointBarrier::checkpoint(7, 0);
        assert!(!rx.has_priority());
        tx.send_priority(PriorityBarrier {
            barrier,
            position: tx.position(),
            overtaken: vec![ChannelEvent::EndOfPartition],
        })
        .unwrap();
        assert!(rx.has_priority());
        let p = rx.recv_priority().unwrap();
        assert_eq!((p.barrier, p.position, rx.received()), (barrier, 3, 1));
        assert_eq!(p.overtaken.len(), 1);
        // Two events before the barrier are still in the ring.
        assert!(rx.recv().is_some() && rx.recv().is_some());
        assert_eq!(rx.received(), p.position);
        assert!(rx.recv_priority().is_none());
    }

    #[test]
    fn the_receiver_lowers_and_raises_the_credit() {
        let bell = Arc::new(Doorbell::new());
        let (mut tx, mut rx, _returns) = channel(8, 8, bell.clone(), bell);
        assert_eq!(
            (rx.credit(), rx.capacity(), tx.buffer_size()),
            (8, 8, usize::MAX)
        );
        rx.announce(2, 4096);
        assert_eq!(tx.buffer_size(), 4096);
        assert!(tx.send(ChannelEvent::EndOfData).is_ok());
        assert!(tx.send(ChannelEvent::EndOfData).is_ok());
        assert!(!tx.has_credit());
        assert!(
            tx.send(ChannelEvent::EndOfData).is_err(),
            "two in flight at most"
        );
        assert!(rx.recv().is_some());
        assert!(tx.send(ChannelEvent::EndOfData).is_ok());
        rx.announce(100, 1 << 20);
        assert_eq!(rx.credit(), 8, "clamped to the ring's capacity");
        for _ in 0..6 {
            assert!(tx.send(ChannelEvent::EndOfData).is_ok());
        }
        assert!(tx.send(ChannelEvent::EndOfData).is_err());
        rx.announce(0, 0);
        assert_eq!(
            (rx.credit(), tx.buffer_size()),
            (1, 1),
            "at least one of each"
        );
    }
}
