"""The memsnap Python module against independent oracles: the memsnap command's own reports.

Traces of two test kernels are recorded with the built memsnap (stream_add: loads, stores
and modifies; threads4: four threads), then read through the module and compared with
`memsnap info --json` (counts per kind, threads, sites), `memsnap dump` (the first accesses
and their sites' names) and `memsnap sim --json` (every level's counts); damaged files must
raise MemsnapError naming the file. Run by ctest (tests/python/CMakeLists.txt) with
PYTHONPATH at the build tree's package; $MEMSNAP is the built CLI and $MEMSNAP_KERNEL_DIR
holds the kernels.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import numpy as np

import memsnap

MEMSNAP = os.environ["MEMSNAP"]
KERNELS = os.environ["MEMSNAP_KERNEL_DIR"]
STREAM_ADD = [os.path.join(KERNELS, "stream_add"), "1000"]
THREADS4 = [os.path.join(KERNELS, "threads4")]


def memsnap_cli(*arguments):
    return subprocess.run([MEMSNAP, *arguments], check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True).stdout


def read_batches(source, n):
    batches = []
    while True:
        batch = source.next_batch(n)
        if batch is None:
            return batches
        assert 1 <= len(batch) <= n
        batches.append(batch)


def read_all(source, n=memsnap.BATCH_SIZE):
    batches = read_batches(source, n)
    return np.concatenate(batches) if batches else np.zeros(0, memsnap.ACCESS_DTYPE)


class Traces(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="memsnap-python.")
        cls.trace = os.path.join(cls.dir, "stream_add.mtr")
        cls.threaded = os.path.join(cls.dir, "threads4.mtr")
        memsnap_cli("record", "-q", "-o", cls.trace, "--", *STREAM_ADD)
        memsnap_cli("record", "-q", "-o", cls.threaded, "--", *THREADS4)
        cls.info = json.loads(memsnap_cli("info", "--json", cls.trace))
        cls.threaded_info = json.loads(memsnap_cli("info", "--json", cls.threaded))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def path(self, name):
        return os.path.join(self.dir, name)

    # ---- reading ----

    def test_counts_equal_info(self):
        for trace, info in ((self.trace, self.info), (self.threaded, self.threaded_info)):
            with memsnap.open(trace) as source:
                accesses = read_all(source)
                self.assertEqual(len(accesses), info["accesses"])
                kinds = np.bincount(accesses["kind"], minlength=3)
                self.assertEqual({name: int(kinds[k]) for k, name in
                                  enumerate(memsnap.KIND_NAMES)}, info["accesses_by_kind"])
                self.assertEqual(len(np.unique(accesses["thread"])), info["threads"])
                described = source.info
                self.assertEqual(described["accesses"], info["accesses"])
                self.assertEqual(described["threads"], info["threads"])
                self.assertEqual(described["sites"], info["sites"])
                self.assertEqual(described["program"], info["program"])
                self.assertEqual(described["argv"], info["argv"])
                self.assertEqual(described["kind"], "mtr trace")
                self.assertEqual(described["exit_status"], info["exit_status"])
                self.assertFalse(described["truncated"])

    def test_batch_sizes_add_up_and_cut_anywhere(self):
        with memsnap.open(self.trace) as source:
            whole = read_all(source)
            self.assertIsNone(source.next_batch())  # and stays ended
        self.assertEqual(whole.dtype.itemsize, 16)
        # sizes that cut the library's batches anywhere give the same accesses in order
        for n in (1, 7, 4096, 100000):
            with memsnap.open(self.trace) as source:
                batches = read_batches(source, n)
                self.assertEqual(sum(len(b) for b in batches), self.info["accesses"])
                self.assertTrue(all(len(b) == n for b in batches[:-1]))
                self.assertTrue(np.array_equal(np.concatenate(batches), whole), "n=%d" % n)
        with memsnap.open(self.trace) as source:
            self.assertEqual(sum(len(b) for b in source), self.info["accesses"])

    def test_first_accesses_and_sites_equal_dump(self):
        lines = memsnap_cli("dump", "--limit", "300", self.threaded).splitlines()
        with memsnap.open(self.threaded) as source:
            first = source.next_batch(300)
            self.assertEqual(len(lines), 300)
            for access, line in zip(first, lines):
                index, thread, kind, address, size, site = line.split(" ", 5)
                self.assertEqual(int(access["thread"]), int(thread), line)
                self.assertEqual(memsnap.KIND_NAMES[access["kind"]], kind, line)
                self.assertEqual(int(access["address"]), int(address, 16), line)
                self.assertEqual(int(access["size"]), int(size), line)
                self.assertEqual(source.site(int(access["site"]))["description"], site, line)
            described = source.site(int(first[0]["site"]))
            self.assertEqual(set(described), {"id", "pc", "object", "function", "file", "line",
                                              "description"})
            self.assertIsNone(source.site(memsnap.SITE_NONE))
            with self.assertRaises(IndexError):
                source.site(source.info["sites"])

    def test_other_inputs(self):
        # din text (no sites, no count in advance) and a PSnAP profile replayed
        din = self.path("stream_add.din")
        with open(din, "w") as out:
            out.write(memsnap_cli("dump", "--format", "din", self.trace))
        profile = self.path("stream_add.psnap")
        memsnap_cli("profile", "-q", "-o", profile, self.trace)
        for path, kind in ((din, "din trace"), (profile, "psnap profile")):
            expected = json.loads(memsnap_cli("info", "--json", path))
            with memsnap.open(path) as source:
                self.assertEqual(source.info["kind"], kind)
                accesses = read_all(source, 10000)
                self.assertEqual(len(accesses), expected["accesses"], path)
                kinds = np.bincount(accesses["kind"], minlength=3)
                self.assertEqual([int(k) for k in kinds],
                                 [expected["accesses_by_kind"][n] for n in memsnap.KIND_NAMES])

    def test_merged_profile_picks_a_thread(self):
        # threads4's four workers merge into one block; thread 2 alone is its 10001 accesses
        profile = self.path("threads4.psnap")
        memsnap_cli("profile", "-q", "-f", "worker", "-o", profile, self.threaded)
        with open(profile) as text:
            self.assertIn("\nblock t1..4 r0 ", text.read())
        expected = json.loads(memsnap_cli("info", "--json", "--thread", "2", profile))
        with memsnap.open(profile, thread=2) as source:
            accesses = read_all(source)
        self.assertEqual(len(accesses), expected["accesses"])
        self.assertEqual(set(int(t) for t in accesses["thread"]), {2})
        with self.assertRaises(memsnap.MemsnapError):
            memsnap.open(profile, rank=3)

    def test_live_program(self):
        with memsnap.open(argv=STREAM_ADD) as source:
            self.assertIsNone(source.info["input"])
            accesses = read_all(source)
            info = source.info
        self.assertEqual(info["exit_status"], 0)
        self.assertEqual(info["capture"], "valgrind")
        self.assertEqual(info["argv"], STREAM_ADD)
        # the same single-threaded program, path and environment as the recorded trace:
        # the same accesses per kind
        kinds = np.bincount(accesses["kind"], minlength=3)
        self.assertEqual({name: int(kinds[k]) for k, name in enumerate(memsnap.KIND_NAMES)},
                         self.info["accesses_by_kind"])
        with memsnap.open(argv=THREADS4) as source:
            self.assertEqual(len(np.unique(read_all(source)["thread"])), 5)  # main, 4 workers
            self.assertEqual(source.info["threads"], 5)

    def test_live_program_closed_early(self):
        # spin runs until killed (60 s at most): closing its source ends it at once
        start = time.monotonic()
        live = memsnap.open(argv=[os.path.join(KERNELS, "spin"), "60"])
        self.assertEqual(len(live.next_batch(1000)), 1000)
        live.close()
        self.assertLess(time.monotonic() - start, 30)
        with self.assertRaises(ValueError):
            live.info

    # ---- simulation ----

    def sim_json(self, path, *hierarchies, model="memsnap"):
        arguments = ["sim", "--json", "--top", "0", "--model", model]
        for hierarchy in hierarchies:
            arguments += ["-H", hierarchy]
        return json.loads(memsnap_cli(*arguments, path))["hierarchies"]

    def assertSameSimulation(self, ours, theirs):
        self.assertEqual(len(ours), len(theirs))
        for hierarchy, expected in zip(ours, theirs):
            for field in ("name", "spec", "write_policy", "model", "seed"):
                self.assertEqual(hierarchy[field], expected[field])
            self.assertEqual(len(hierarchy["levels"]), len(expected["levels"]))
            for level, want in zip(hierarchy["levels"], expected["levels"]):
                for field in ("level", "size", "line_size", "associativity", "policy",
                              "accesses", "hits", "misses", "hit_rate", "writebacks", "kinds"):
                    self.assertEqual(level[field], want[field], (hierarchy["name"], field))
                self.assertEqual(level["threads"], want["threads"])
                self.assertEqual(int(level["site_misses"].sum()) + level["unsited_misses"],
                                 level["misses"])

    def test_simulate_equals_sim_json(self):
        for trace in (self.trace, self.threaded):
            self.assertSameSimulation(memsnap.simulate(trace, "nehalem"),
                                      self.sim_json(trace, "nehalem"))
        several = ["nehalem", "32k/64/8,256KiB/64/8", "hpcmo-07"]
        self.assertSameSimulation(memsnap.simulate(self.trace, several),
                                  self.sim_json(self.trace, *several))
        self.assertSameSimulation(memsnap.simulate(self.trace, "evaluation"),
                                  self.sim_json(self.trace, "evaluation"))
        self.assertSameSimulation(memsnap.simulate(self.threaded, "nehalem", model="cachegrind"),
                                  self.sim_json(self.threaded, "nehalem", model="cachegrind"))
        table = memsnap_cli("hierarchies").split("\n\n")[0].splitlines()[1:]
        self.assertEqual([entry[0] for entry in memsnap.hierarchies()],
                         [line.split()[0] for line in table])

    def test_simulate_a_source_from_where_it_stands(self):
        # Cachegrind's model counts one L1 access per access: the simulation of a source
        # read 5 accesses into covers the rest of it, accesses set aside included
        with memsnap.open(self.trace) as source:
            source.next_batch(5)
            result = memsnap.simulate(source, "32k/64/8", model="cachegrind")
            self.assertIsNone(source.next_batch())
        self.assertEqual(result[0]["levels"][0]["accesses"], self.info["accesses"] - 5)

    # ---- errors ----

    def assertRaisesNaming(self, path, *words):
        with self.assertRaises(memsnap.MemsnapError) as caught:
            with memsnap.open(path) as source:
                for _ in source:
                    pass
        message = str(caught.exception)
        for word in (path, *words):
            self.assertIn(word, message)
        self.assertLess(caught.exception.status, 0)
        return caught.exception

    def test_damaged_inputs_raise(self):
        with open(self.trace, "rb") as f:
            data = f.read()
        cut = self.path("cut.mtr")
        with open(cut, "wb") as f:
            f.write(data[:len(data) // 2])
        self.assertEqual(self.assertRaisesNaming(cut, "offset").status_name, "truncated input")
        corrupt = self.path("corrupt.mtr")
        with open(corrupt, "wb") as f:
            middle = len(data) // 2
            f.write(data[:middle] + bytes(b ^ 0xFF for b in data[middle:middle + 16])
                    + data[middle + 16:])
        self.assertRaisesNaming(corrupt, "offset")
        self.assertRaisesNaming(self.path("missing.mtr"))

    def test_bad_arguments_raise(self):
        with self.assertRaises(memsnap.MemsnapError) as caught:
            memsnap.simulate(self.trace, "32k/63/8")
        self.assertIn("63", str(caught.exception))
        with self.assertRaises(ValueError):
            memsnap.simulate(self.trace, "nehalem", policy="oldest")
        with self.assertRaises(ValueError):
            memsnap.open()
        source = memsnap.open(self.trace)
        source.close()
        with self.assertRaises(ValueError):
            source.next_batch()


if __name__ == "__main__":
    unittest.main(verbosity=2)
