"""strata's rocksdict API, through Python: the dict interface, encodings
(checked byte for byte against rocksdict's format), iterators and views,
batches, snapshots, column families, table files and ingestion,
checkpoints, maintenance calls and errors. When rocksdict is installed the
same database is also read by rocksdict (and written by it, while its
files stay readable here)."""

import os
import re
import pickle

import pytest

from strata import (
    AccessType,
    BlockBasedIndexType,
    BlockBasedOptions,
    Cache,
    Checkpoint,
    CuckooTableOptions,
    DBPath,
    DbClosedError,
    DBCompactionStyle,
    DBCompressionType,
    DataBlockIndexType,
    IngestExternalFileOptions,
    MemtableFactory,
    Options,
    ReadOptions,
    Rdict,
    SliceTransform,
    SstFileWriter,
    WriteBatch,
    WriteOptions,
)


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "db")


def test_dict_interface(path):
    with Rdict(path) as db:
        db["a"] = 1
        db[b"b"] = b"2"
        db[3] = 3.5
        db[4.5] = True
        db[True] = None
        db["obj"] = {"x": [1, 2]}
        assert db["a"] == 1
        assert db[b"b"] == b"2"
        assert db[3] == 3.5
        assert db[4.5] is True
        assert db[True] is None
        assert db["obj"] == {"x": [1, 2]}
        assert "a" in db and "zz" not in db
        with pytest.raises(KeyError):
            db["zz"]
        assert db.get("zz") is None
        assert db.get("zz", 7) == 7
        assert db[["a", "zz", 3]] == [1, None, 3.5]
        assert db.get(["a", "zz"], default=0) == [1, 0]
        del db["a"]
        del db["never-there"]  # as rocksdict: no error
        assert "a" not in db
        db.put("p", "q", WriteOptions())
        db.delete("p")
        assert db.get("p") is None
        with pytest.raises(Exception, match="as keys"):
            db[[1, 2]] = 3


def test_int_and_float_encodings_match_rocksdict(path):
    # The bytes rocksdict writes for each type (read back in raw mode).
    with Rdict(path) as db:
        for k in [0, 1, -1, 127, 128, -128, -129, 2**63 - 1, -(2**63), 2**70, -(2**70)]:
            db[k] = k
    expected = {
        0: "00", 1: "01", -1: "ff", 127: "7f", 128: "0080", -128: "80",
        -129: "ff7f", 2**70: "400000000000000000", -(2**70): "c00000000000000000",
    }
    with Rdict(path, Options(raw_mode=True)) as raw:
        got = {}
        for k, v in raw.items():
            assert k[0] == 3 and k == v
            got[int.from_bytes(k[1:], "big", signed=True)] = k[1:].hex()
    for n, hexed in expected.items():
        assert got[n] == hexed
    with Rdict(path) as db:
        assert db[2**70] == 2**70 and db[-(2**63)] == -(2**63)
    with Rdict(path + "2", Options(raw_mode=True)) as raw:
        with pytest.raises(TypeError):
            raw["str"] = b"x"
        raw[b"k"] = b"v"
        assert raw[b"k"] == b"v"


def test_keys_sort_as_rocksdict_sorts_them(path):
    keys = [-300, -1, 0, 1, 2, 255, 256, 70000, 2**70, 1.5, -2.5, "b", "a", "ab", b"z", b"a", True, False]
    with Rdict(path) as db:
        for k in keys:
            db[k] = 1
        # bytes, str, int (numerically), float, bool: rocksdict's order.
        assert list(db.keys()) == [b"a", b"z", "a", "ab", "b", -300, -1, 0, 1, 2, 255, 256, 70000, 2**70, 1.5, -2.5, False, True]


def test_value_encodings(path):
    with Rdict(path) as db:
        db["s"] = "v"
        db["f"] = 1.5
        db["none"] = None
        db["list"] = [1, 2]
    with Rdict(path, Options(raw_mode=True)) as raw:
        assert raw[b"\x02s"] == b"\x02v"
        assert raw[b"\x02f"] == b"\x04" + bytes.fromhex("3ff8000000000000")
        assert raw[b"\x02none"] == b"\x06" + pickle.dumps(None)
        assert raw[b"\x02list"] == b"\x06" + pickle.dumps([1, 2])


def test_custom_dumps_and_loads(path):
    with Rdict(path) as db:
        db.set_dumps(lambda v: repr(v).encode())
        db.set_loads(lambda b: ("loaded", b))
        db["k"] = [1]
        assert db["k"] == ("loaded", b"[1]")


def test_iterators_and_views(path):
    with Rdict(path) as db:
        for i in range(10):
            db[i] = i * i
        assert list(db.keys()) == list(range(10))
        assert list(db.values(backwards=True))[:2] == [81, 64]
        assert list(db.items(from_key=7)) == [(7, 49), (8, 64), (9, 81)]
        assert list(db.keys(backwards=True, from_key=2)) == [2, 1, 0]
        it = db.iter()
        it.seek_to_first()
        assert it.valid() and it.key() == 0 and it.value() == 0
        it.next()
        assert it.key() == 1
        it.seek(5)
        assert it.key() == 5
        it.prev()
        assert it.key() == 4
        it.seek_to_last()
        assert it.key() == 9
        it.next()
        assert not it.valid()
        it.seek_for_prev(100)
        assert it.key() == 9
        it.status()
        ro = ReadOptions()
        ro.set_iterate_lower_bound(3)
        ro.set_iterate_upper_bound(6)
        assert list(db.keys(read_opt=ro)) == [3, 4, 5]


def test_batches_snapshots_and_ranges(path):
    with Rdict(path) as db:
        db["x"] = 0
        snap = db.snapshot()
        wb = WriteBatch()
        wb["a"] = 1
        wb.put("b", 2)
        wb.delete("x")
        assert len(wb) == 3 and not wb.is_empty()
        db.write(wb)
        assert db.get("x") is None and db["a"] == 1
        assert snap["x"] == 0 and snap.get("a") is None
        assert list(snap.keys()) == ["x"]
        db.delete_range("a", "b")
        assert "a" not in db and db["b"] == 2
        wb.clear()
        assert wb.is_empty()


def test_column_families(path):
    with Rdict(path) as db:
        users = db.create_column_family("users", Options())
        users["u1"] = "ann"
        assert "u1" not in db
        assert db.get_column_family("users")["u1"] == "ann"
        wb = WriteBatch()
        wb.put("u2", "bob", users)
        db.write(wb)
        assert users["u2"] == "bob"
        users.close()  # the database closes with its last handle
    assert sorted(Rdict.list_cf(path)) == ["default", "users"]
    # Every existing family opens with the database.
    with Rdict(path) as db:
        u = db.get_column_family("users")
        assert u["u2"] == "bob"
        u.close()
        db.drop_column_family("users")
    assert Rdict.list_cf(path) == ["default"]
    with Rdict(path, column_families={"logs": Options()}) as db:
        logs = db.get_column_family("logs")
        logs[1] = 2
        assert logs[1] == 2
        logs.close()


def test_write_options(path):
    wo = WriteOptions()
    assert not (wo.sync or wo.no_slowdown or wo.low_pri or wo.ignore_missing_column_families)
    wo.no_slowdown = True
    wo.low_pri = True
    wo.memtable_insert_hint_per_batch = True
    assert wo.no_slowdown and wo.low_pri and wo.memtable_insert_hint_per_batch
    wo.disable_wal(True)  # a method, as in rocksdict
    with Rdict(path) as db:
        # Nothing stalls: a low-priority no_slowdown write goes.
        db.put("k", "v", wo)
        assert db["k"] == "v"
        users = db.create_column_family("users", Options())
        wb = WriteBatch()
        wb.put("a", 1)
        wb.put("b", 2, users)
        users.close()
        db.drop_column_family("users")
        with pytest.raises(Exception, match="Invalid column family"):
            db.write(wb)
        assert "a" not in db
        ignore = WriteOptions()
        ignore.ignore_missing_column_families = True
        db.write(wb, ignore)
        assert db["a"] == 1


def test_options_tables_and_maintenance(path):
    opts = Options()
    opts.set_compression_type(DBCompressionType.zstd())
    opts.set_min_level_to_compress(1)
    opts.set_compression_per_level([DBCompressionType.none(), DBCompressionType.zstd()])
    opts.set_compaction_style(DBCompactionStyle.level())
    opts.increase_parallelism(2)
    opts.optimize_level_style_compaction(64 << 20)
    opts.set_write_buffer_size(1 << 20)
    opts.set_prefix_extractor(SliceTransform.create_fixed_prefix(3))
    table = BlockBasedOptions()
    table.set_bloom_filter(10, False)
    cache = Cache(8 << 20)
    table.set_block_cache(cache)
    opts.set_block_based_table_factory(table)
    opts.enable_statistics()
    opts.set_optimize_filters_for_hits(True)
    rows = Cache(1 << 20)
    opts.set_row_cache(rows)
    with Rdict(path, opts) as db:
        for i in range(1000):
            db[f"key{i:05}"] = "v" * 100
        db.flush()
        db.flush_wal()
        db.compact_range(None, None)
        assert db["key00500"] == "v" * 100
        assert db["key00500"] == "v" * 100
        assert db.get("key99999") is None
        assert rows.get_usage() > 0
        assert re.search(r"rocksdb\.row\.cache\.hit COUNT : [1-9]", opts.get_statistics())
        options_files = [f for f in os.listdir(path) if f.startswith("OPTIONS-")]
        text = open(os.path.join(path, max(options_files))).read()
        assert "optimize_filters_for_hits=true" in text
        assert cache.get_usage() > 0
        assert cache.get_pinned_usage() <= cache.get_usage()
        cache.set_capacity(1 << 20)
        assert cache.get_capacity() == 1 << 20
        assert db.property_int_value("rocksdb.estimate-num-keys") == 1000
        assert "level" in db.property_value("rocksdb.levelstats").lower()
        assert db.latest_sequence_number() == 1000
        files = db.live_files()
        assert files and files[0]["size"] > 0
        assert sum(f["num_entries"] for f in files) == 1000
        assert db.path() == path
        assert opts.get_statistics() is not None


def test_compression_dictionaries(tmp_path):
    path = str(tmp_path / "dict")
    opts = Options()
    opts.create_if_missing(True)
    opts.set_compression_type(DBCompressionType.lz4())
    opts.set_compression_options(-14, 32767, 0, 8192)
    opts.set_bottommost_compression_type(DBCompressionType.zstd())
    opts.set_bottommost_compression_options(-14, 3, 0, 16384, True)
    opts.set_bottommost_zstd_max_train_bytes(1 << 17, True)
    opts.set_zstd_max_train_bytes(0)
    table = BlockBasedOptions()
    table.set_hybrid_ribbon_filter(10, -1)
    table.set_ribbon_filter(10)
    table.set_index_type(BlockBasedIndexType.hash_search())
    table.set_data_block_index_type(DataBlockIndexType.binary_search_and_hash())
    table.set_data_block_hash_ratio(0.5)
    table.set_cache_index_and_filter_blocks(True)
    table.set_pin_l0_filter_and_index_blocks_in_cache(True)
    table.set_pin_top_level_index_and_filter(False)
    opts.set_block_based_table_factory(table)
    opts.set_prefix_extractor(SliceTransform.create_fixed_prefix(3))
    with Rdict(path, opts) as db:
        for i in range(3000):
            db[f"key{i:05}"] = f"value-{i % 11}-shared-words-{i}"
        db.flush()
        db.compact_range(None, None)
        assert db["key01234"] == "value-2-shared-words-1234"
        options_files = [f for f in os.listdir(path) if f.startswith("OPTIONS-")]
        text = open(os.path.join(path, max(options_files))).read()
        assert "bottommost_compression=kZSTD" in text
        assert "max_dict_bytes=8192;" in text
        assert "zstd_max_train_bytes=131072;" in text
        assert "filter_policy=ribbonfilter:10:0" in text
        assert "index_type=kHashSearch" in text
        assert "data_block_index_type=kDataBlockBinaryAndHash" in text
        assert "cache_index_and_filter_blocks=true" in text
        assert "pin_top_level_index_and_filter=false" in text
        assert db.get("key03000") is None
    with Rdict(path, opts) as db:
        assert db["key02999"] == "value-7-shared-words-2999"


def test_sst_files_ingestion_and_checkpoint(tmp_path):
    path = str(tmp_path / "db")
    w = SstFileWriter(Options())
    w.open(str(tmp_path / "a.sst"))
    for i in range(10):
        w[i] = i
    w.finish()
    assert w.file_size() > 0
    with Rdict(path) as db:
        opt = IngestExternalFileOptions()
        opt.set_move_files(False)
        db.ingest_external_file([str(tmp_path / "a.sst")], opt)
        assert db[9] == 9
        Checkpoint(db).create_checkpoint(str(tmp_path / "cp"))
    with Rdict(str(tmp_path / "cp")) as cp:
        assert cp[3] == 3
    w2 = SstFileWriter()
    with pytest.raises(Exception, match="not opened"):
        w2["k"] = "v"


def test_access_types_close_destroy_and_repair(path):
    db = Rdict(path)
    db["k"] = "v"
    it = db.iter()
    db.close()
    with pytest.raises(DbClosedError):
        db["k"]
    del it
    ro = Rdict(path, access_type=AccessType.read_only(False))
    assert ro["k"] == "v"
    with pytest.raises(Exception):
        ro["k2"] = "v2"
    ro.close()
    sec = Rdict(path, access_type=AccessType.secondary(path + "_sec"))
    assert sec["k"] == "v"
    with pytest.raises(Exception):
        sec["k2"] = "v2"
    sec.close()
    Rdict.repair(path)
    with Rdict(path) as db:
        assert db["k"] == "v"
    Rdict.destroy(path)
    o = Options()
    o.create_if_missing(False)
    with pytest.raises(Exception):
        Rdict(path, o)


def test_bad_input_raises_instead_of_crashing(path):
    with Rdict(path) as db:
        with pytest.raises(Exception):
            db[object()] = 1
        with pytest.raises(TypeError):
            db.put("k")
        with pytest.raises(TypeError):
            db.write("not a batch")
    with pytest.raises(Exception):
        Rdict("/proc/definitely/not/a/db")


def test_rocksdict_reads_what_strata_wrote(path):
    rocksdict = pytest.importorskip("rocksdict")
    with Rdict(path) as db:
        db["s"] = "v"
        db[42] = [1, 2]
        db[b"b"] = 1.25
    db = rocksdict.Rdict(path)
    try:
        assert db["s"] == "v"
        assert db[42] == [1, 2]
        assert db[b"b"] == 1.25
        db["from_rocksdict"] = 7
    finally:
        db.close()
    # And back (rocksdict's write is still in its WAL).
    with Rdict(path) as db:
        assert db["from_rocksdict"] == 7
        assert db[42] == [1, 2]


def test_table_format_version_6_both_ways(path):
    # rocksdict's RocksDB (9.x/10.x) writes format_version 6 tables by
    # default; Strata reads them, and writes them when asked.
    rocksdict = pytest.importorskip("rocksdict")
    db = rocksdict.Rdict(path)
    try:
        for i in range(3000):
            db[i] = "r%d" % i
        db.flush()
        db.compact_range(None, None)
    finally:
        db.close()
    opts = Options()
    table = BlockBasedOptions()
    table.set_format_version(6)
    table.set_bloom_filter(10, False)
    opts.set_block_based_table_factory(table)
    with Rdict(path, opts) as db:
        assert db[2999] == "r2999"
        assert db.get(3000) is None
        assert sum(1 for _ in db.keys()) == 3000
        for i in range(3000, 6000):
            db[i] = "s%d" % i
        db.flush()
        props = [f["name"] for f in db.live_files()]
        assert len(props) == 2, props
    db = rocksdict.Rdict(path)
    try:
        assert db[2999] == "r2999"
        assert db[5999] == "s5999"
        assert db.get(6000) is None
        db.compact_range(None, None)
        assert sum(1 for _ in db.keys()) == 6000
    finally:
        db.close()
    with Rdict(path) as db:
        assert db[4000] == "s4000"
    # Partitioned index and filters, XXH3 checksums, both ways.
    from strata import BlockBasedIndexType, ChecksumType

    table.set_index_type(BlockBasedIndexType.two_level_index_search())
    table.set_partition_filters(True)
    table.set_metadata_block_size(256)
    table.set_checksum_type(ChecksumType.xxh3())
    opts.set_block_based_table_factory(table)
    with Rdict(path, opts) as db:
        for i in range(6000, 9000):
            db[i] = "p%d" % i
        db.flush()
        assert db[8999] == "p8999"
    db = rocksdict.Rdict(path)
    try:
        assert db[8999] == "p8999"
        assert db[100] == "r100"
        assert db.get(9000) is None
    finally:
        db.close()
    # A format_version Strata does not write is refused at open.
    table.set_format_version(7)
    opts.set_block_based_table_factory(table)
    with pytest.raises(Exception, match="format_version 7"):
        Rdict(path, opts)


def test_load_latest_handles_and_unsupported_tables(path):
    from strata import ColumnFamily, CuckooTableOptions, PlainTableFactoryOptions

    with Rdict(path) as db:
        logs = db.create_column_family("logs")
        handle = db.get_column_family_handle("logs")
        assert isinstance(handle, ColumnFamily)
        wb = WriteBatch()
        wb.set_default_column_family(handle)
        wb[1] = "one"
        db.write(wb)
        assert logs[1] == "one"
        logs.close()
    opts, cfs = Options.load_latest(path)
    assert list(cfs) == ["logs"]
    opts.create_missing_column_families(True)
    cfs["more"] = Options()
    with Rdict(path, options=opts, column_families=cfs) as db:
        more = db.get_column_family("more")
        more["m"] = 1
        assert db.get_column_family("logs")[1] == "one"
        more.close()
    o = Options()
    o.set_allow_mmap_reads(True)
    o.set_allow_mmap_writes(True)
    o.set_plain_table_factory(PlainTableFactoryOptions())


def test_db_paths_hold_the_tables(tmp_path):
    o = Options(raw_mode=True)
    tables = tmp_path / "tables"
    o.set_db_paths([DBPath(str(tables), 1 << 30)])
    path = str(tmp_path / "db")
    with Rdict(path, options=o) as db:
        db[b"k"] = b"v"
        db.flush()
    assert any(n.endswith(".sst") for n in os.listdir(tables))
    assert not any(n.endswith(".sst") for n in os.listdir(path))
    with Rdict(path, options=o) as db:
        assert db[b"k"] == b"v"
    Rdict.destroy(path, o)
    assert not tables.exists()


def test_cuckoo_tables_hold_uniform_and_mixed_entries(tmp_path):
    co = CuckooTableOptions()
    co.set_hash_ratio(0.5)
    co.set_max_search_depth(200)
    co.set_cuckoo_block_size(10)
    co.set_identity_as_first_hash(False)
    co.set_use_module_hash(True)
    for name, keys in [
        ("uniform", [b"key%05d" % i for i in range(300)]),
        # Keys of other sizes cannot be a cuckoo table: written
        # block-based, never dropped.
        ("mixed", [b"k%d" % i for i in range(300)]),
    ]:
        o = Options(raw_mode=True)
        o.set_allow_mmap_reads(True)
        o.set_cuckoo_table_factory(co)
        path = str(tmp_path / name)
        with Rdict(path, options=o) as db:
            for i, k in enumerate(keys):
                db[k] = b"val%05d" % i
            db.flush()
            for i, k in enumerate(keys):
                assert db[k] == b"val%05d" % i
            assert list(db.keys()) == sorted(keys)


def _plain_options(module, bloom_locality=0):
    pt = module.PlainTableFactoryOptions()
    pt.user_key_length = 0
    pt.bloom_bits_per_key = 10
    pt.hash_table_ratio = 0.75
    pt.index_sparseness = 16
    opts = module.Options(raw_mode=True)
    opts.set_prefix_extractor(module.SliceTransform.create_fixed_prefix(4))
    opts.set_plain_table_factory(pt)
    if bloom_locality:
        opts.set_bloom_locality(bloom_locality)
        opts.set_memtable_prefix_bloom_ratio(0.1)
        opts.set_memtable_whole_key_filtering(True)
    return opts


def test_plain_table_both_ways(path):
    from strata import PlainTableFactoryOptions

    pt = PlainTableFactoryOptions()
    pt.encoding_type = "prefix"
    assert pt.encoding_type == "prefix"
    with pytest.raises(ValueError):
        pt.hash_table_ratio = -1.0
    keys = [b"k%03d%05d" % (i % 100, i) for i in range(2000)]
    opts = _plain_options(strata_module(), 1)
    # The flush writes its table through memory maps.
    opts.set_allow_mmap_writes(True)
    with Rdict(path, opts) as db:
        for i, k in enumerate(keys):
            db[k] = b"v%d" % i
        db.flush()
        assert db[keys[777]] == b"v777"
        assert db.get(b"k777zzzzz") is None
        assert list(db.keys()) == sorted(keys)
        # Backwards too, which RocksDB's own PlainTable reader refuses.
        assert list(db.keys(backwards=True)) == sorted(keys, reverse=True)
        with pytest.raises(Exception, match="DeleteRange not supported"):
            db.delete_range(keys[0], keys[5])
    rocksdict = pytest.importorskip("rocksdict")
    # rocksdict's RocksDB reads Strata's PlainTable files and writes its own.
    db = rocksdict.Rdict(path, _plain_options(rocksdict))
    try:
        assert db[keys[1234]] == b"v1234"
        for i in range(2000, 3000):
            db[b"k%03d%05d" % (i % 100, i)] = b"w%d" % i
        db.flush()
        db.compact_range(None, None)
    finally:
        db.close()
    with Rdict(path, _plain_options(strata_module())) as db:
        assert db[b"k05002050"] == b"w2050"
        assert db[keys[5]] == b"v5"
        assert sum(1 for _ in db.keys()) == 3000


def strata_module():
    import strata

    return strata


def test_dumps_may_write_to_the_database(path):
    # A dumps callback that writes re-enters the put path on this thread.
    with Rdict(path) as db:
        def dumps(v):
            db[b"side"] = b"effect"
            return pickle.dumps(v)

        db.set_dumps(dumps)
        db["k"] = [1]
        assert db[b"side"] == b"effect"
        assert db["k"] == [1]


def test_a_damaged_str_value_raises(path):
    with Rdict(path) as db:
        db["k"] = "ok"
    with Rdict(path, Options(raw_mode=True)) as raw:
        raw[b"\x02k"] = b"\x02\xff\xfe"  # a str value that is not UTF-8
    with Rdict(path) as db:
        with pytest.raises(UnicodeDecodeError):
            db["k"]


def test_ttl_databases_stamp_values_and_expire_them(path):
    import datetime
    import struct
    import time

    with Rdict(path, access_type=AccessType.with_ttl(3600)) as db:
        db["a"] = "alpha"
        db[1] = [1, 2]
        wb = WriteBatch()
        wb.put("b", "beta")
        db.write(wb)
        assert db["a"] == "alpha" and db[1] == [1, 2] and db["b"] == "beta"
        assert dict(db.items()) == {1: [1, 2], "a": "alpha", "b": "beta"}
        assert db[["a", "b", "zz"]] == ["alpha", "beta", None]
        snap = db.snapshot()
        assert snap["a"] == "alpha"
        del snap
    # Stored values carry RocksDB's 4-byte little-endian timestamp.
    o = Options(raw_mode=True)
    with Rdict(path, o) as raw:
        stored = raw[b"\x02a"]
        now = time.time()
        assert stored[:-4] == b"\x02alpha"
        assert abs(struct.unpack("<I", stored[-4:])[0] - now) < 600
    # A 1-second TTL: after 2 s a full compaction drops the value.
    with Rdict(path, access_type=AccessType.with_ttl(datetime.timedelta(seconds=1))) as db:
        db["short"] = "lived"
        assert db["short"] == "lived"
        time.sleep(2.1)
        db.compact_range(None, None)
        assert db.get("short") is None
        assert db.get("a") is None
    rocksdict = pytest.importorskip("rocksdict")
    # rocksdict's own TTL database reads what strata wrote.
    with Rdict(path, access_type=AccessType.with_ttl(3600)) as db:
        db["c"] = "gamma"
    db = rocksdict.Rdict(path, access_type=rocksdict.AccessType.with_ttl(3600))
    try:
        assert db["c"] == "gamma"
        db["d"] = "delta"
    finally:
        db.close()
    with Rdict(path, access_type=AccessType.with_ttl(3600)) as db:
        assert db["d"] == "delta"


def test_memtable_kinds_and_direct_io(path):
    for i, factory in enumerate(
        [
            MemtableFactory.vector(),
            MemtableFactory.hash_skip_list(1000),
            MemtableFactory.hash_link_list(1000),
        ]
    ):
        o = Options()
        o.create_if_missing(True)
        o.set_prefix_extractor(SliceTransform.create_fixed_prefix(2))
        o.set_memtable_factory(factory)
        o.set_allow_concurrent_memtable_write(False)
        o.set_use_direct_io_for_flush_and_compaction(True)
        o.set_use_direct_reads(True)
        p = f"{path}{i}"
        try:
            db = Rdict(p, o)
        except Exception as e:
            # A temporary directory without O_DIRECT (tmpfs) says so.
            assert "direct I/O" in str(e), e
            o.set_use_direct_io_for_flush_and_compaction(False)
            o.set_use_direct_reads(False)
            db = Rdict(p, o)
        for k in range(300):
            db[f"k{k:04d}"] = k
        db.flush(True)
        for k in range(300, 400):
            db[f"k{k:04d}"] = k
        assert db["k0123"] == 123 and db["k0350"] == 350
        assert len(list(db.keys())) == 400
        db.close()


def test_secondary_instances_catch_up_with_the_primary(path):
    primary = Rdict(path)
    for i in range(1000):
        primary[i] = "old"
    primary.flush(True)
    primary[1000] = "in the WAL"
    sec = Rdict(path, access_type=AccessType.secondary(path + "_secondary"))
    assert sec[1000] == "in the WAL" and sec[5] == "old"
    for i in range(1000):
        primary[i] = "new"
    primary[2000] = "later"
    primary.flush(True)
    primary.compact_range(None, None)
    # The view it had (its files are kept open after the compaction).
    assert sec[5] == "old" and sec.get(2000) is None
    sec.try_catch_up_with_primary()
    assert sec[5] == "new" and sec[2000] == "later"
    with pytest.raises(Exception):
        primary.try_catch_up_with_primary()
    sec.close()
    primary.close()
