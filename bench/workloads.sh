# The application workload set (sourced by bench/run-apps.sh; usable from any script):
# application-shaped codes of tests/kernels and real Debian programs on inputs made
# deterministically from files every Debian system has.
#
#   apps_inputs DIR             writes the Debian programs' inputs into DIR
#   apps_define KERNELS INPUTS  fills the array `apps`, one workload per element:
#                               "name|program|small args|large args|profile options"
#
# Small arguments are the test size (about a second under Valgrind, the kernels' defaults);
# large ones make a run about 4x longer (more iterations or rounds where the code has
# them, so that the footprint stays and only the length grows; a larger matrix or input
# otherwise), the run whose profile should not grow. bzip2, xz and sqlite3 keep their work
# in a shared library (libbz2, liblzma, libsqlite3), so they are profiled with --object
# for it and their executable (until 2026-11-29 with --all-objects, which also kept the
# loader's relocations: 27959 sites for sqlite3's 21518); the others' work is in their
# executable, the default selection.
# python3 is listed apart (apps_slow): Valgrind takes 12 s to start the interpreter alone.
# LAMMPS (Debian's lammps: lmp over liblammps.so.0, an MPI program run as one process) runs
# the LJ melt of its benchmark suite on 864 atoms, 20 and 80 steps, profiled with
# --object liblammps; it is in the set when /usr/bin/lmp is installed (bench/run.sh
# installs the package).

apps_inputs() {
  local dir=$1 f
  mkdir -p "$dir"
  # The licence texts (symbolic links skipped: they repeat a file), 237 KB on Debian 12.
  for f in /usr/share/common-licenses/*; do
    [ -L "$f" ] || cat "$f"
  done > "$dir/text-large"
  head -c $(($(stat -c %s "$dir/text-large") / 4)) "$dir/text-large" > "$dir/text-small"
  apps_sql 1000 > "$dir/query-small.sql"
  apps_sql 4000 > "$dir/query-large.sql"
  # LAMMPS's bench/in.lj, at 6x6x6 unit cells (864 atoms) instead of 20x20x20
  for steps in 20 80; do
    cat << EOF > "$dir/lj-$steps.in"
units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 6 0 6 0 6
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 1.44 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify delay 0 every 20 check no
fix 1 all nve
run $steps
EOF
  done
  cat > "$dir/words.py" << 'EOF'
import sys
counts = {}
with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
    for line in f:
        for word in line.lower().split():
            word = word.strip(".,;:()[]\"'")
            if word:
                counts[word] = counts.get(word, 0) + 1
ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
print(len(counts), sum(counts.values()), ranked[:5])
EOF
}

# A table of ROWS rows from a seeded linear congruential generator, an index, an
# aggregate, a range count, a join with a group-by and an ordered scan.
apps_sql() {
  cat << EOF
CREATE TABLE item(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, price REAL);
WITH RECURSIVE seq(n, x) AS (SELECT 1, 12345 UNION ALL
  SELECT n + 1, (x * 1103515245 + 12345) % 2147483648 FROM seq WHERE n < $1)
INSERT INTO item SELECT n, x % 97, printf('item%08d', x % 100000), (x % 10000) / 100.0 FROM seq;
CREATE INDEX item_grp ON item(grp);
CREATE TABLE grp AS SELECT grp AS id, count(*) AS n, avg(price) AS mean FROM item GROUP BY grp;
SELECT count(*), sum(price) FROM item WHERE grp BETWEEN 10 AND 40;
SELECT g.id, g.n, round(g.mean, 3), count(i.id) FROM grp g JOIN item i
  ON i.grp = g.id AND i.price > g.mean GROUP BY g.id ORDER BY g.n DESC LIMIT 5;
SELECT name FROM item ORDER BY name LIMIT 3 OFFSET $(($1 / 2));
EOF
}

apps_define() {
  local k=$1 in=$2
  apps=(
    "adi|$k/adi|24 2|24 8|"
    "ssor|$k/ssor|22 3|22 12|"
    "fft3d|$k/fft3d|16 2|16 14|"
    "mg|$k/mg|5 1|5 4|"
    "cg|$k/cg|1000 15|1000 60|"
    "isort|$k/isort|16 2|16 8|"
    "covariance|$k/triangular|covariance 100|covariance 160|"
    "cholesky|$k/triangular|cholesky 100|cholesky 160|"
    "lu|$k/triangular|lu 100|lu 160|"
    "syrk|$k/triangular|syrk 100|syrk 160|"
    "hashtab|$k/hashtab|20000 4|20000 16|"
    "bintree|$k/bintree|20000 4|20000 16|"
    "gzip|/usr/bin/gzip|-c -6 $in/text-small|-c -6 $in/text-large|"
    "bzip2|/usr/bin/bzip2|-c -9 $in/text-small|-c -9 $in/text-large|--object libbz2 --object bzip2"
    "xz|/usr/bin/xz|-c -3 $in/text-small|-c -3 $in/text-large|--object liblzma --object xz"
    "sort|/usr/bin/sort|--parallel=1 -k2 $in/text-small|--parallel=1 -k2 $in/text-large|"
    "sqlite3|/usr/bin/sqlite3|-batch -init $in/query-small.sql :memory: .quit|-batch -init $in/query-large.sql :memory: .quit|--object libsqlite3 --object sqlite3"
  )
  if [ -x /usr/bin/lmp ]; then
    apps+=("lammps|/usr/bin/lmp|-in $in/lj-20.in -log none -screen none|-in $in/lj-80.in -log none -screen none|--object liblammps")
  fi
  apps_slow=(
    "python3|/usr/bin/python3.11|-S -E $in/words.py $in/text-small|-S -E $in/words.py $in/text-large|"
  )
}
