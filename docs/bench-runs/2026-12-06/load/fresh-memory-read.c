#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static char*a; static size_t size=1999811272; static int fd; static int T;
static void*work(void*arg){ long t=(long)arg; size_t chunk=64<<20; for(size_t off=t*chunk; off<size; off+=T*chunk){ size_t n=size-off<chunk?size-off:chunk; size_t got=0; while(got<n){ssize_t r=pread(fd,a+off+got,n-got,off+got); if(r<=0)break; got+=r;} } return 0;}
int main(int argc,char**argv){
  T=atoi(argv[1]);
  char*p=mmap(0,size+(2<<20),PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
  a=(char*)(((size_t)p+(2<<20)-1)&~((size_t)(2<<20)-1));
  madvise(a,size&~((size_t)(2<<20)-1),MADV_HUGEPAGE);
  fd=open("/tmp/iwibench-bench-gemma-3-1b-shape/model.safetensors",O_RDONLY);
  double t0=now(); pthread_t th[8]; for(long t=0;t<T;t++) pthread_create(&th[t],0,work,(void*)t); for(int t=0;t<T;t++) pthread_join(th[t],0);
  printf("threads %d: %.2f s, %.2f GB/s\n",T,now()-t0,size/1e9/(now()-t0));
}
