/* Independent jobs on several threads (internal to libmemsnap): the widths of an exact
 * cache surface (lib/locality/surface.c), the first levels of a set of cache hierarchies
 * (lib/cache/simulator.c). The caller's thread takes jobs too; each thread takes the next
 * job not yet taken, so uneven jobs even out. Made for rounds of a few milliseconds or
 * less of work each: the workers stay, asleep between rounds. */
#ifndef MEMSNAP_CORE_JOBS_H
#define MEMSNAP_CORE_JOBS_H

typedef struct jobs jobs;

/* The threads to use for `available` independent jobs: `requested` if > 0, else
 * $MEMSNAP_THREADS if it is a number > 0, else one per online CPU; at most `available`, at
 * least 1. */
int jobs_threads(int requested, int available);

/* A pool of threads - 1 workers (the caller is the last); NULL when threads <= 1 or no
 * worker could be started: jobs_run then runs every job in the caller's thread. */
jobs *jobs_new(int threads);
void jobs_free(jobs *pool);

/* Runs job(context, i) for i in 0..count-1 and returns when all are done: MS_OK, or the
 * first failure's status, its message set in the caller's thread (ms_error_message). */
int jobs_run(jobs *pool, int count, int (*job)(void *context, int index), void *context);

#endif
