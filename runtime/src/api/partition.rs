//! How a stream's records reach the next operator's subtasks without a key
//! (Flink's physical partitioning: `rebalance`, `shuffle`, `rescale`,
//! `forward`, `broadcast`, `partitionCustom`), chain boundaries
//! (`startNewChain`) and `union`.
//!
//! Each ends the stream's stage in an exchange and starts a new stage fed
//! by it. On a thread-per-core engine a chain boundary is a real hand-over:
//! the records are serialized into network buffers and travel through the
//! SPSC rings, to another core where the subtask runs elsewhere. (Flink's
//! slot sharing has no counterpart: every subtask of every stage runs on
//! worker `index % workers`, and a worker runs all the subtasks it gets.)
//!
//! Flink's `disableChaining()` on an operator is a new chain on both of
//! its sides: [`Stream::disable_chaining`] builds the operators it is
//! given between two chain boundaries.

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use weir_net::Wire;

use crate::api::stream::Stream;
use crate::build::builder::ChainBuilder;
use crate::build::channel_rescale::InputRoute;
use crate::build::demand::TimestampDemand;
use crate::build::exchange::{FanOutTail, PartitionedInputChain};
use crate::exchange::fan_out::Partitioning;

/// The stream of a union or a partitioning.
pub type PartitionedStream<'j, T> = Stream<'j, T, PartitionedInputChain<T>>;

impl<'j, T: Wire + 'static, B: ChainBuilder<T>> Stream<'j, T, B> {
    /// Sends the records round-robin over the next operator's subtasks
    /// (Flink's `rebalance`): evens out skew.
    pub fn rebalance(self) -> PartitionedStream<'j, T> {
        self.partition(
            Partitioning::RoundRobin,
            InputRoute::Rebalanced,
            "rebalance",
        )
    }

    /// Sends each record to a subtask picked uniformly at random (Flink's
    /// `shuffle`).
    pub fn shuffle(self) -> PartitionedStream<'j, T> {
        self.partition(Partitioning::Shuffle, InputRoute::Rebalanced, "shuffle")
    }

    /// Sends the records round-robin over a share of the next operator's
    /// subtasks (Flink's `rescale`): each sender feeds only its own group,
    /// so fewer channels than a rebalance when the parallelisms differ.
    pub fn rescale(self) -> PartitionedStream<'j, T> {
        self.partition(Partitioning::Rescale, InputRoute::Rebalanced, "rescale")
    }

    /// Sends each subtask's records to the next operator's subtask of the
    /// same index (Flink's `forward`): the next operator must have this
    /// stage's parallelism, or the job does not start.
    pub fn forward(self) -> PartitionedStream<'j, T> {
        let job = self.job;
        let stream = self.partition(Partitioning::Forward, InputRoute::Rebalanced, "forward");
        let exchange = stream.input.expect("a partitioned stream has an input");
        job.require_forward(exchange);
        stream
    }

    /// Sends every record to every subtask of the next operator (Flink's
    /// `DataStream.broadcast()`). For the broadcast state pattern, use
    /// [`broadcast`](Self::broadcast) and `connect`.
    pub fn broadcast_all(self) -> PartitionedStream<'j, T> {
        self.partition(Partitioning::Broadcast, InputRoute::Broadcast, "broadcast")
    }

    /// Sends each record to the subtask `partitioner(key, n)` picks among
    /// the `n` subtasks of the next operator, `key` being `key_fn(record)`
    /// (Flink's `partitionCustom`). A partitioner returning `n` or more
    /// fails the job.
    pub fn partition_custom<K, P, KF>(self, partitioner: P, key_fn: KF) -> PartitionedStream<'j, T>
    where
        P: Fn(&K, usize) -> usize + Send + Sync + 'static,
        KF: Fn(&T) -> K + Send + Sync + 'static,
    {
        let choose = Arc::new(move |record: &T, n: usize| partitioner(&key_fn(record), n));
        self.partition(
            Partitioning::Custom(choose),
            InputRoute::Rebalanced,
            "partition-custom",
        )
    }

    /// Starts a new chain with the next operator (Flink's
    /// `startNewChain`): the records go forward to a new stage (round-robin
    /// if its parallelism is set to another), so this stage's operators and
    /// the next run as separate tasks.
    pub fn start_new_chain(self) -> PartitionedStream<'j, T> {
        self.partition(Partitioning::Forward, InputRoute::Rebalanced, "new-chain")
    }

    /// Flink's `disableChaining()`: the operators `ops` adds to the stream
    /// run as a chain of their own, neither chained to this stream's
    /// operators nor to the next ones (a chain boundary before and after
    /// them). For example `s.disable_chaining(|s| s.map("parse", parse))`
    /// runs `parse` as its own task.
    pub fn disable_chaining<U, B2>(
        self,
        ops: impl FnOnce(PartitionedStream<'j, T>) -> Stream<'j, U, B2>,
    ) -> PartitionedStream<'j, U>
    where
        U: Wire + 'static,
        B2: ChainBuilder<U>,
    {
        ops(self.start_new_chain()).start_new_chain()
    }

    /// The records of this stream and of `other` as one stream (Flink's
    /// `union`), in no particular order between the two; each input's
    /// records keep their order per subtask. Both end their stages: the
    /// union is a new stage reading both (forward where the parallelisms
    /// match, round-robin where not). A union of a union adds to it.
    /// Watermarks: the union's event time is the minimum of its inputs'.
    pub fn union<B2: ChainBuilder<T>>(self, other: Stream<'j, T, B2>) -> PartitionedStream<'j, T> {
        let job = self.job;
        let has_event_time = self.stamped.is_some() || other.stamped.is_some();
        // The union's timestamps come from its inputs; every edge of it
        // carries them if they are read downstream (a record of an input
        // without event time crosses with NO_TIMESTAMP), so all its edges
        // and its head share one demand.
        let (exchanges, demand) = match self.union.clone() {
            // A stream fresh from a union: its head reads the exchanges
            // of the list, to which `other` is added.
            Some(union) => union,
            None => {
                let demand = TimestampDemand::after(self.stamped.clone());
                let e = job.new_exchange(Partitioning::<T>::Forward.ship_strategy());
                let tail = FanOutTail::with(e, Partitioning::Forward).stamped(Some(demand.clone()));
                self.end_with(tail, e);
                (Arc::new(Mutex::new(vec![e])), demand)
            }
        };
        if let Some(d) = &other.stamped {
            demand.add_upstream(d.clone());
        }
        let e = job.new_exchange(Partitioning::<T>::Forward.ship_strategy());
        let tail = FanOutTail::with(e, Partitioning::Forward).stamped(Some(demand.clone()));
        other.end_with(tail, e);
        let first = {
            let mut list = exchanges.lock().unwrap_or_else(|p| p.into_inner());
            list.push(e);
            list[0]
        };
        job.add_co_input(first, e);
        let mut stream = input_stream(
            job,
            exchanges.clone(),
            InputRoute::Rebalanced,
            "union",
            Some(demand.clone()),
        );
        stream.stamped = has_event_time.then(|| demand.clone());
        stream.union = Some((exchanges, demand));
        stream
    }

    /// Ends this stage in a fan-out exchange partitioned as `partitioning`
    /// says, and starts the stage it feeds.
    fn partition(
        self,
        partitioning: Partitioning<T>,
        route: InputRoute,
        name: &str,
    ) -> PartitionedStream<'j, T> {
        let job = self.job;
        // The stream after the exchange: its timestamps come from this one.
        let stamped = self.stamped.clone().map(|d| TimestampDemand::after([d]));
        let e = job.new_exchange(partitioning.ship_strategy());
        self.end_with(
            FanOutTail::with(e, partitioning).stamped(stamped.clone()),
            e,
        );
        let mut stream = input_stream(
            job,
            Arc::new(Mutex::new(vec![e])),
            route,
            name,
            stamped.clone(),
        );
        stream.stamped = stamped;
        stream
    }
}

/// A new stage's stream reading `exchanges`.
fn input_stream<'j, T: 'static>(
    job: &'j crate::api::graph::JobGraph,
    exchanges: Arc<Mutex<Vec<usize>>>,
    route: InputRoute,
    name: &str,
    stamped: Option<TimestampDemand>,
) -> PartitionedStream<'j, T> {
    let first = exchanges.lock().unwrap_or_else(|p| p.into_inner())[0];
    Stream {
        job,
        chain: PartitionedInputChain {
            exchanges,
            route,
            stamped: stamped.clone(),
            _record: PhantomData,
        },
        name: name.to_owned(),
        parallelism: None,
        input: Some(first),
        branch: None,
        side: None,
        reserved: Cell::new(None),
        union: None,
        stamped,
        _record: PhantomData,
    }
}
