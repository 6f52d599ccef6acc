/** Whether a process of this pid exists (signal 0 only asks); EPERM means it does, but is another user's. */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
