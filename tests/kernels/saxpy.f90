! y = a*x + y over n reals (n from the first argument, default 100000), in Fortran.
program saxpy_kernel
  implicit none
  integer :: n, i, length
  character(len=32) :: arg
  real(8), allocatable :: x(:), y(:)
  n = 100000
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg, length)
    read (arg, *) n
  end if
  allocate (x(n), y(n))
  do i = 1, n
    x(i) = i
    y(i) = 2 * i
  end do
  call saxpy(n, 3.0d0, x, y)
  print *, y(n / 2)
contains
  subroutine saxpy(n, a, x, y)
    integer, intent(in) :: n
    real(8), intent(in) :: a, x(n)
    real(8), intent(inout) :: y(n)
    integer :: i
    do i = 1, n
      y(i) = a * x(i) + y(i)
    end do
  end subroutine saxpy
end program saxpy_kernel
