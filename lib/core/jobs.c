/* Independent jobs on several threads: see jobs.h. */
#include "jobs.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "memsnap/error.h"

#define MAX_WORKERS 255

struct jobs {
  pthread_t threads[MAX_WORKERS];
  int count; /* workers started */
  pthread_mutex_t lock;
  pthread_cond_t start, done;
  unsigned long round; /* rounds handed out */
  int busy;            /* workers still in the current round */
  int stop;
  int (*job)(void *context, int index);
  void *context;
  int job_count;
  atomic_int next; /* the next job to take */
  int error;       /* the round's first failure, 0 if none (under lock) */
  char message[512];
};

int jobs_threads(int requested, int available) {
  long threads = requested;
  if (threads <= 0) {
    const char *given = getenv("MEMSNAP_THREADS");
    char *end;
    threads = given && *given ? strtol(given, &end, 10) : 0;
    if (threads <= 0 || *end) threads = sysconf(_SC_NPROCESSORS_ONLN);
  }
  if (threads > available) threads = available;
  if (threads > MAX_WORKERS + 1) threads = MAX_WORKERS + 1;
  return threads < 1 ? 1 : (int)threads;
}

/* Takes jobs of the current round until none is left (any thread). */
static void take_jobs(jobs *pool) {
  for (;;) {
    int i = atomic_fetch_add(&pool->next, 1);
    if (i >= pool->job_count) return;
    int rc = pool->job(pool->context, i);
    if (rc < 0) {
      pthread_mutex_lock(&pool->lock);
      if (!pool->error) {
        pool->error = rc;
        snprintf(pool->message, sizeof pool->message, "%s", ms_error_message());
      }
      pthread_mutex_unlock(&pool->lock);
    }
  }
}

static void *worker(void *argument) {
  jobs *pool = argument;
  unsigned long seen = 0;
  pthread_mutex_lock(&pool->lock);
  for (;;) {
    while (!pool->stop && pool->round == seen)
      pthread_cond_wait(&pool->start, &pool->lock);
    if (pool->stop) break;
    seen = pool->round;
    pthread_mutex_unlock(&pool->lock);
    take_jobs(pool);
    pthread_mutex_lock(&pool->lock);
    if (--pool->busy == 0) pthread_cond_signal(&pool->done);
  }
  pthread_mutex_unlock(&pool->lock);
  return NULL;
}

void jobs_free(jobs *pool) {
  if (!pool) return;
  pthread_mutex_lock(&pool->lock);
  pool->stop = 1;
  pthread_cond_broadcast(&pool->start);
  pthread_mutex_unlock(&pool->lock);
  for (int t = 0; t < pool->count; t++)
    pthread_join(pool->threads[t], NULL);
  pthread_cond_destroy(&pool->start);
  pthread_cond_destroy(&pool->done);
  pthread_mutex_destroy(&pool->lock);
  free(pool);
}

jobs *jobs_new(int threads) {
  if (threads <= 1) return NULL;
  jobs *pool = calloc(1, sizeof *pool);
  if (!pool) return NULL;
  pthread_mutex_init(&pool->lock, NULL);
  pthread_cond_init(&pool->start, NULL);
  pthread_cond_init(&pool->done, NULL);
  for (int t = 0; t < threads - 1 && t < MAX_WORKERS; t++) {
    if (pthread_create(&pool->threads[t], NULL, worker, pool) != 0) break;
    pool->count++;
  }
  if (pool->count == 0) {
    jobs_free(pool);
    return NULL;
  }
  return pool;
}

int jobs_run(jobs *pool, int count, int (*job)(void *context, int index), void *context) {
  if (!pool || count <= 1) {
    for (int i = 0; i < count; i++) {
      int rc = job(context, i);
      if (rc < 0) return rc;
    }
    return MS_OK;
  }
  pthread_mutex_lock(&pool->lock);
  pool->job = job;
  pool->context = context;
  pool->job_count = count;
  atomic_store(&pool->next, 0);
  pool->error = 0;
  pool->busy = pool->count;
  pool->round++;
  pthread_cond_broadcast(&pool->start);
  pthread_mutex_unlock(&pool->lock);
  take_jobs(pool);
  pthread_mutex_lock(&pool->lock);
  while (pool->busy > 0)
    pthread_cond_wait(&pool->done, &pool->lock);
  int rc = pool->error;
  pthread_mutex_unlock(&pool->lock);
  if (rc < 0) return ms_error_set(rc, "%s", pool->message);
  return MS_OK;
}
