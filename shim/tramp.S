/* The one trampoline behind every generated entry point: it keeps the
 * caller's argument registers, asks cg_tramp_enter(entry) for the real
 * function (after the entry's boundary, if it is one), and jumps to it with
 * the caller's arguments and return address untouched. x86-64 System V. */
	.text
	.p2align 4
	.globl cg_tramp_common
	.hidden cg_tramp_common
	.type cg_tramp_common, @function
cg_tramp_common:
	.cfi_startproc
	pushq %rdi
	.cfi_adjust_cfa_offset 8
	pushq %rsi
	.cfi_adjust_cfa_offset 8
	pushq %rdx
	.cfi_adjust_cfa_offset 8
	pushq %rcx
	.cfi_adjust_cfa_offset 8
	pushq %r8
	.cfi_adjust_cfa_offset 8
	pushq %r9
	.cfi_adjust_cfa_offset 8
	pushq %rax
	.cfi_adjust_cfa_offset 8
	/* Seven pushes after the caller's return address: 16-byte aligned. */
	subq $128, %rsp
	.cfi_adjust_cfa_offset 128
	movdqa %xmm0, 0(%rsp)
	movdqa %xmm1, 16(%rsp)
	movdqa %xmm2, 32(%rsp)
	movdqa %xmm3, 48(%rsp)
	movdqa %xmm4, 64(%rsp)
	movdqa %xmm5, 80(%rsp)
	movdqa %xmm6, 96(%rsp)
	movdqa %xmm7, 112(%rsp)
	movl %r11d, %edi
	call cg_tramp_enter
	movq %rax, %r11
	movdqa 0(%rsp), %xmm0
	movdqa 16(%rsp), %xmm1
	movdqa 32(%rsp), %xmm2
	movdqa 48(%rsp), %xmm3
	movdqa 64(%rsp), %xmm4
	movdqa 80(%rsp), %xmm5
	movdqa 96(%rsp), %xmm6
	movdqa 112(%rsp), %xmm7
	addq $128, %rsp
	.cfi_adjust_cfa_offset -128
	popq %rax
	.cfi_adjust_cfa_offset -8
	popq %r9
	.cfi_adjust_cfa_offset -8
	popq %r8
	.cfi_adjust_cfa_offset -8
	popq %rcx
	.cfi_adjust_cfa_offset -8
	popq %rdx
	.cfi_adjust_cfa_offset -8
	popq %rsi
	.cfi_adjust_cfa_offset -8
	popq %rdi
	.cfi_adjust_cfa_offset -8
	jmp *%r11
	.cfi_endproc
	.size cg_tramp_common, .-cg_tramp_common

/* Before cgraft has found glibc's dlsym (a sanitizer's runtime asks before
 * any constructor ran), it is found first, the arguments kept. */
	.macro CG_DLSYM_RESOLVE
	pushq %rdi
	.cfi_adjust_cfa_offset 8
	pushq %rsi
	.cfi_adjust_cfa_offset 8
	subq $8, %rsp
	.cfi_adjust_cfa_offset 8
	call cg_dlsym_resolve
	addq $8, %rsp
	.cfi_adjust_cfa_offset -8
	popq %rsi
	.cfi_adjust_cfa_offset -8
	popq %rdi
	.cfi_adjust_cfa_offset -8
	.endm

/* dlsym(RTLD_NEXT, ...) is relative to its caller, which glibc finds from
 * its return address: jump to glibc's dlsym with the caller's frame as it is,
 * so the lookup and dlerror() read exactly as without cgraft. Other handles
 * go to cgraft's lookup, which hands out its wrappers. */
	.p2align 4
	.globl cg_dlsym_v234
	.type cg_dlsym_v234, @function
cg_dlsym_v234:
	.cfi_startproc
	cmpq $-1, %rdi
	jne 1f
	movq cg_real_dlsym_v234(%rip), %r11
	testq %r11, %r11
	jz 2f
	jmp *%r11
2:	CG_DLSYM_RESOLVE
	movq cg_real_dlsym_v234(%rip), %r11
	testq %r11, %r11
	jz 1f
	jmp *%r11
1:	jmp cg_dlsym_lookup
	.cfi_endproc
	.size cg_dlsym_v234, .-cg_dlsym_v234

	.p2align 4
	.globl cg_dlsym_v225
	.type cg_dlsym_v225, @function
cg_dlsym_v225:
	.cfi_startproc
	cmpq $-1, %rdi
	jne 1f
	movq cg_real_dlsym_v225(%rip), %r11
	testq %r11, %r11
	jz 2f
	jmp *%r11
2:	CG_DLSYM_RESOLVE
	movq cg_real_dlsym_v225(%rip), %r11
	testq %r11, %r11
	jz 1f
	jmp *%r11
1:	jmp cg_dlsym_lookup
	.cfi_endproc
	.size cg_dlsym_v225, .-cg_dlsym_v225

	.symver cg_dlsym_v234, dlsym@@GLIBC_2.34
	.symver cg_dlsym_v225, dlsym@GLIBC_2.2.5
	.section .note.GNU-stack,"",@progbits
