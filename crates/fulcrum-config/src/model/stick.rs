//! Stick tables in the model: a proxy's `stick-table` declaration, the data types it stores,
//! the actions that track keys and touch counters (`track-sc*`, `sc-inc-gpc*`, `sc-set-gpt*`),
//! the fetches and converters that read them, and `stick on|match|store-*` persistence rules.

use std::time::Duration;

use super::{Condition, SampleExpr, Span};
use crate::sample::SmpType;

/// `stick-table type ... size ... [expire ...] [nopurge] [store ...]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StickTable {
    pub span: Span,
    pub key: TableKey,
    /// Most entries the table holds (`size`).
    pub size: u32,
    /// `expire`: an entry not touched for this long goes.
    pub expire: Option<Duration>,
    /// `nopurge`: a full table refuses new entries instead of evicting the oldest.
    pub nopurge: bool,
    /// `store` data types, in the order HAProxy lays them out (its data type numbers).
    pub store: Vec<Stored>,
    /// `peers <name>`: accepted, nothing is synchronised (no `peers` sections yet).
    pub peers: Option<String>,
}

impl StickTable {
    /// The stored entry of a data type, if the table keeps it.
    pub fn stored(&self, ty: DataType) -> Option<&Stored> {
        self.store.iter().find(|s| s.ty == ty)
    }
}

/// The key type of a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableKey {
    /// IPv4 addresses (an IPv6 client is tracked only when IPv4-mapped).
    Ip,
    /// IPv6 addresses (IPv4 ones are mapped).
    Ipv6,
    /// 32-bit signed integers.
    Integer,
    /// Strings of at most `len` bytes (longer ones are cut).
    String { len: usize },
    /// Byte strings padded with zeros to `len` bytes (longer ones are cut).
    Binary { len: usize },
}

impl TableKey {
    /// Whether a key expression of type `out` can be cast to this key type (HAProxy's
    /// `stktable_compatible_sample()` through its `sample_casts` table; an address converts to
    /// every key type, a boolean to integers, strings and bytes, a method and bytes to strings
    /// and bytes only).
    pub fn takes(self, out: SmpType) -> bool {
        match out {
            SmpType::Int | SmpType::Ip | SmpType::Str | SmpType::Any => true,
            SmpType::Bool => !matches!(self, TableKey::Ip | TableKey::Ipv6),
            SmpType::Bin | SmpType::Meth => {
                matches!(self, TableKey::String { .. } | TableKey::Binary { .. })
            }
        }
    }
}

/// HAProxy 2.6's stick-table data types, in its numbering (the order `show table` prints).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DataType {
    ServerId,
    Gpt0,
    Gpc0,
    Gpc0Rate,
    ConnCnt,
    ConnRate,
    ConnCur,
    SessCnt,
    SessRate,
    HttpReqCnt,
    HttpReqRate,
    HttpErrCnt,
    HttpErrRate,
    BytesInCnt,
    BytesInRate,
    BytesOutCnt,
    BytesOutRate,
    Gpc1,
    Gpc1Rate,
    ServerKey,
    HttpFailCnt,
    HttpFailRate,
    Gpt,
    Gpc,
    GpcRate,
}

impl DataType {
    pub const ALL: [DataType; 25] = [
        DataType::ServerId,
        DataType::Gpt0,
        DataType::Gpc0,
        DataType::Gpc0Rate,
        DataType::ConnCnt,
        DataType::ConnRate,
        DataType::ConnCur,
        DataType::SessCnt,
        DataType::SessRate,
        DataType::HttpReqCnt,
        DataType::HttpReqRate,
        DataType::HttpErrCnt,
        DataType::HttpErrRate,
        DataType::BytesInCnt,
        DataType::BytesInRate,
        DataType::BytesOutCnt,
        DataType::BytesOutRate,
        DataType::Gpc1,
        DataType::Gpc1Rate,
        DataType::ServerKey,
        DataType::HttpFailCnt,
        DataType::HttpFailRate,
        DataType::Gpt,
        DataType::Gpc,
        DataType::GpcRate,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DataType::ServerId => "server_id",
            DataType::Gpt0 => "gpt0",
            DataType::Gpc0 => "gpc0",
            DataType::Gpc0Rate => "gpc0_rate",
            DataType::ConnCnt => "conn_cnt",
            DataType::ConnRate => "conn_rate",
            DataType::ConnCur => "conn_cur",
            DataType::SessCnt => "sess_cnt",
            DataType::SessRate => "sess_rate",
            DataType::HttpReqCnt => "http_req_cnt",
            DataType::HttpReqRate => "http_req_rate",
            DataType::HttpErrCnt => "http_err_cnt",
            DataType::HttpErrRate => "http_err_rate",
            DataType::BytesInCnt => "bytes_in_cnt",
            DataType::BytesInRate => "bytes_in_rate",
            DataType::BytesOutCnt => "bytes_out_cnt",
            DataType::BytesOutRate => "bytes_out_rate",
            DataType::Gpc1 => "gpc1",
            DataType::Gpc1Rate => "gpc1_rate",
            DataType::ServerKey => "server_key",
            DataType::HttpFailCnt => "http_fail_cnt",
            DataType::HttpFailRate => "http_fail_rate",
            DataType::Gpt => "gpt",
            DataType::Gpc => "gpc",
            DataType::GpcRate => "gpc_rate",
        }
    }

    pub fn from_name(name: &str) -> Option<DataType> {
        DataType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// A frequency counter over a period (`<type>_rate(<period>)`).
    pub fn is_rate(self) -> bool {
        matches!(
            self,
            DataType::Gpc0Rate
                | DataType::ConnRate
                | DataType::SessRate
                | DataType::HttpReqRate
                | DataType::HttpErrRate
                | DataType::BytesInRate
                | DataType::BytesOutRate
                | DataType::Gpc1Rate
                | DataType::HttpFailRate
                | DataType::GpcRate
        )
    }

    /// An array whose size is the first argument (`gpc(<n>)`, `gpt(<n>)`, `gpc_rate(<n>,..)`).
    pub fn is_array(self) -> bool {
        matches!(self, DataType::Gpt | DataType::Gpc | DataType::GpcRate)
    }
}

/// One stored data type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stored {
    pub ty: DataType,
    /// The period of a rate type.
    pub period: Option<Duration>,
    /// The element count of an array type (1 otherwise).
    pub elems: u32,
}

/// Stick-counter actions, in `tcp-request` and `http-request|response` rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StickAction {
    /// `track-sc<slot> <key> [table <t>]`; `key_type`: the key expression's output type.
    Track { slot: u8, key: SampleExpr, key_type: SmpType, table: Option<String> },
    /// `sc-inc-gpc(<idx>,<slot>)` (`array`), `sc-inc-gpc0(<slot>)`, `sc-inc-gpc1(<slot>)`.
    IncGpc { slot: u8, idx: u32, array: bool },
    /// `sc-set-gpt(<idx>,<slot>) <value>` (`array`), `sc-set-gpt0(<slot>) <value>`.
    SetGpt { slot: u8, idx: u32, array: bool, value: GptValue },
}

/// The value `sc-set-gpt*` stores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GptValue {
    Int(i64),
    Expr(SampleExpr),
}

/// Which counters a stick-counter fetch reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScSource {
    /// `sc_*(<slot>[,<table>])`, `sc<slot>_*([<table>])`: what the stream tracks in a slot
    /// (looked up in `table` instead when given).
    Slot { slot: u8, table: Option<String> },
    /// `src_*([<table>])`: the entry of the client's address in `table` (the proxy's own
    /// table when `None`).
    Src { table: Option<String> },
}

/// What a stick-counter fetch reads or does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScRead {
    /// A stored counter's value (a rate over its period).
    Data(DataType),
    /// An array element (`gpc`, `gpt`, `gpc_rate`); `idx` fixed by the first argument.
    Elem(DataType, u32),
    /// `kbytes_in` / `kbytes_out`: byte counts divided by 1024.
    KBytes { out: bool },
    /// `*_inc_gpc0|1`, `*_inc_gpc(idx)`: increments, returns the new value.
    IncGpc(u32, bool),
    /// `*_clr_gpc0|1`, `*_clr_gpc(idx)`: clears, returns the former value.
    ClrGpc(u32, bool),
    /// `sc_tracked`: the slot tracks something.
    Tracked,
    /// `*_trackers`: how many streams track the entry.
    Trackers,
    /// `src_updt_conn_cnt`: counts a connection on the client's entry, returns `conn_cnt`.
    UpdtConnCnt,
}

/// A stick-counter fetch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScFetch {
    pub src: ScSource,
    pub read: ScRead,
}

/// What a `table_*` converter returns for the entry of its input in a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableConv {
    /// `in_table`: the key is there.
    In,
    Data(DataType),
    Elem(DataType, u32),
    KBytes {
        out: bool,
    },
    Trackers,
    /// `table_expire`: milliseconds left; `table_idle`: since the last update.
    Expire,
    Idle,
}

/// `stick on|match|store-request|store-response <pattern> [table <t>] [if|unless <cond>]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StickRule {
    pub span: Span,
    pub kind: StickKind,
    pub key: SampleExpr,
    /// The key expression's output type.
    pub key_type: SmpType,
    pub table: Option<String>,
    pub cond: Option<Condition>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StickKind {
    /// `stick on`: match, then store.
    On,
    Match,
    StoreRequest,
    StoreResponse,
}
